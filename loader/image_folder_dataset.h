// ImageFolderDataset: torchvision's ImageFolder (classes = sorted
// sub-folders, samples sorted by path; the listing is
// foundation/data_index/image_folder_index.h) decoded by image_decoder.h.
//
// Immutable after construction; Load() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "foundation/data_index/image_folder_index.h"
#include "loader/dataset.h"
#include "loader/image.h"
#include "loader/image_decoder.h"

namespace gradsync {

class ImageFolderDataset : public Dataset {
 public:
  // `channels`: 0 as stored, 1 grayscale, 3 RGB. Errors as ScanImageFolder
  // and, with data roots, CheckIndexUnderDataRoots.
  static absl::StatusOr<std::unique_ptr<ImageFolderDataset>> Open(
      const std::string& root, int channels, const DatasetAccess& access = {});

  int64_t size() const override { return index_.samples.size(); }
  int64_t label(int64_t i) const override { return index_.samples[i].label; }
  std::string name(int64_t i) const override { return index_.samples[i].path; }
  int num_classes() const override {
    return static_cast<int>(index_.classes.size());
  }
  absl::StatusOr<Image> Load(int64_t index) const override;
  const std::vector<std::string>& classes() const { return index_.classes; }

 private:
  ImageFolderDataset(ImageFolderIndex index, int channels, DecodeLimits limits)
      : index_(std::move(index)), channels_(channels), limits_(limits) {}
  const ImageFolderIndex index_;
  const int channels_;
  const DecodeLimits limits_;
};

}  // namespace gradsync
