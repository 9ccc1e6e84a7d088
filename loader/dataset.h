// Dataset: random access to labelled images. ImageFolderDataset is
// torchvision's ImageFolder (classes = sorted sub-folders, samples sorted by
// path) decoded by image_decoder.h; OpenDataset opens a split of whatever a
// data set path names (a folder, or synthetic_dataset.h's "synthetic:...").
//
// Implementations are immutable after construction; Load() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loader/image.h"
#include "loader/image_decoder.h"
#include "loader/image_folder_index.h"
#include "loader/memory_budget.h"

namespace gradsync {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // Names the sample in errors (its file path for image folders).
  virtual std::string name(int64_t index) const = 0;
  // Labels lie in [0, num_classes()).
  virtual int num_classes() const = 0;
  // The decoded 8-bit HWC image (RGB or grayscale). Errors name the sample.
  virtual absl::StatusOr<Image> Load(int64_t index) const = 0;
};

// What a host lets a data set do: where it may lie (data_roots.h; empty:
// anywhere), how large its images may be, and how much memory may hold
// decoded images between epochs (cached_dataset.h; null: none).
struct DatasetAccess {
  std::vector<std::string> data_roots;
  DecodeLimits decode;
  std::shared_ptr<MemoryBudget> decoded_cache;
};

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

// Split `split` of the data set `path`: SyntheticDataset::Open for a
// "synthetic:" path, else the ImageFolderDataset at SplitPath(path, split).
// `channels` as ImageFolderDataset::Open. With data roots, the folder and
// every link its listing followed must resolve under one of them
// (PERMISSION_DENIED naming the path). With a decoded_cache budget the
// folder's images are cached (CachedDataset). Errors as those.
absl::StatusOr<std::shared_ptr<const Dataset>> OpenDataset(
    const std::string& path, const std::string& split, int channels,
    const DatasetAccess& access = {});

}  // namespace gradsync
