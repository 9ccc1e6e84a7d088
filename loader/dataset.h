// Dataset: random access to labelled images (or rows of tensors), and what
// a host lets a data set do. Implementations: ImageFolderDataset
// (image_folder_dataset.h), SyntheticDataset (synthetic_dataset.h),
// CachedDataset (cached_dataset.h), TensorFileDataset
// (tensor_file_dataset.h); OpenDataset (open_dataset.h) picks one for a
// data set path.
//
// Implementations are immutable after construction; Load() is thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loader/image.h"
#include "loader/image_decoder.h"
#include "loader/memory_budget.h"

namespace gradsync {

// The samples of a data set of tensors: row i of each is sample i.
struct TensorSamples {
  at::Tensor x;  // [N, ...] uint8 (batched as x * (1/255), as an image of
                 // those bytes is) or float32 (as it is)
  at::Tensor y;  // [N] int64 class indices or [N, ...] float32 targets
};

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
  // A data set of tensors (tensor_file_dataset.h) gives its rows here and
  // no images: batches are rows of x and y (batch_loader.h), label() and
  // num_classes() speak of y when it holds class indices (0 classes when
  // its targets are floats). Null for images.
  virtual const TensorSamples* tensors() const { return nullptr; }
};

// What a host lets a data set do: where it may lie (data_roots.h; empty:
// anywhere), how large its images may be, and how much memory may hold
// decoded images between epochs (cached_dataset.h; null: none).
struct DatasetAccess {
  std::vector<std::string> data_roots;
  DecodeLimits decode;
  std::shared_ptr<MemoryBudget> decoded_cache;
};

}  // namespace gradsync
