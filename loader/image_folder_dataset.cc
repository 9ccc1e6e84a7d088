#include "loader/image_folder_dataset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "foundation/data_index/data_roots.h"
#include "foundation/files/confined_path.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<ImageFolderDataset>> ImageFolderDataset::Open(
    const std::string& root, int channels, const DatasetAccess& access) {
  const std::vector<std::string>& data_roots = access.data_roots;
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  if (absl::Status s = CheckUnderRoots("data set", root, data_roots); !s.ok()) {
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

}  // namespace gradsync
