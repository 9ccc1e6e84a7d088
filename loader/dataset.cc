#include "loader/dataset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "loader/image_decoder.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<ImageFolderDataset>> ImageFolderDataset::Open(
    const std::string& root, int channels) {
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(root);
  if (!index.ok()) return index.status();
  return std::unique_ptr<ImageFolderDataset>(
      new ImageFolderDataset(std::move(*index), channels));
}

absl::StatusOr<Image> ImageFolderDataset::Load(int64_t index) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat("sample index ", index, " outside [0, ", size(), ")"));
  }
  return DecodeImageFile(index_.samples[index].path, channels_);
}

}  // namespace gradsync
