#include "loader/dataset.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "loader/cached_dataset.h"
#include "loader/data_roots.h"
#include "loader/image_decoder.h"
#include "loader/synthetic_dataset.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<ImageFolderDataset>> ImageFolderDataset::Open(
    const std::string& root, int channels, const DatasetAccess& access) {
  const std::vector<std::string>& data_roots = access.data_roots;
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  if (absl::Status s = CheckUnderDataRoots("data set", root, data_roots);
      !s.ok()) {
    return s;  // before the listing, which names what it finds
  }
  absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(root);
  if (!index.ok()) return index.status();
  if (absl::Status s = CheckIndexUnderDataRoots("data set", *index, data_roots);
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<ImageFolderDataset>(
      new ImageFolderDataset(std::move(*index), channels, access.decode));
}

absl::StatusOr<Image> ImageFolderDataset::Load(int64_t index) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat("sample index ", index, " outside [0, ", size(), ")"));
  }
  return DecodeImageFile(index_.samples[index].path, channels_, limits_);
}

absl::StatusOr<std::shared_ptr<const Dataset>> OpenDataset(
    const std::string& path, const std::string& split, int channels,
    const DatasetAccess& access) {
  if (absl::StartsWith(path, kSyntheticPrefix)) {
    auto synthetic = SyntheticDataset::Open(path, split, channels);
    if (!synthetic.ok()) return synthetic.status();
    return std::shared_ptr<const Dataset>(std::move(*synthetic));
  }
  auto folder =
      ImageFolderDataset::Open(SplitPath(path, split), channels, access);
  if (!folder.ok()) return folder.status();
  std::shared_ptr<const Dataset> dataset(std::move(*folder));
  if (access.decoded_cache && access.decoded_cache->limit() > 0) {
    return std::shared_ptr<const Dataset>(
        std::make_shared<CachedDataset>(dataset, access.decoded_cache));
  }
  return dataset;
}

}  // namespace gradsync
