// TensorFileDataset: a split held as one torch.save file of {"x": X, "y":
// Y} (foundation/torch_file/tensor_file.h): what a PyTorch user makes from
// NumPy or pandas in one line. Opening checks the file as hostile (its
// layout and both storage records' checksums) and copies X and Y into CPU
// tensors: the worker's tensor memory limit (worker/train/host_tensor_limit.h)
// counts them, and a file larger than it fails to open with
// RESOURCE_EXHAUSTED. Samples are rows (Dataset::tensors()); there are no
// images to decode, so no decoded cache and no augmentation.
//
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "loader/dataset.h"

namespace gradsync {

// The most classes int64 targets may name (the largest index + 1).
inline constexpr int64_t kMaxTensorFileClasses = int64_t{1} << 20;

class TensorFileDataset : public Dataset {
 public:
  // `file` must lie under access.data_roots (links resolved). Errors name
  // the file: NOT_FOUND, INVALID_ARGUMENT (its layout, a negative class
  // index or more than kMaxTensorFileClasses), DATA_LOSS (a checksum),
  // RESOURCE_EXHAUSTED (memory).
  static absl::StatusOr<std::unique_ptr<TensorFileDataset>> Open(
      const std::string& file, const DatasetAccess& access = {});

  int64_t size() const override { return samples_.x.size(0); }
  int64_t label(int64_t index) const override;
  std::string name(int64_t index) const override;
  int num_classes() const override { return classes_; }
  // FAILED_PRECONDITION: the samples are tensors (tensors()).
  absl::StatusOr<Image> Load(int64_t index) const override;
  const TensorSamples* tensors() const override { return &samples_; }

 private:
  TensorFileDataset(std::string file, TensorSamples samples, int classes)
      : file_(std::move(file)),
        samples_(std::move(samples)),
        classes_(classes) {}
  const std::string file_;
  const TensorSamples samples_;
  const int classes_;  // 0 for float targets
};

}  // namespace gradsync
