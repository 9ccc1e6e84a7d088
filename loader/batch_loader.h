// BatchLoader: N threads decode and augment the samples of an epoch into
// preallocated batch tensors; batches come out in order.
//
// Work is dispatched per sample (not per batch), so the last batch of an
// epoch is filled by every thread together and a short epoch has no long
// tail. At most threads * prefetch_depth batches are in flight. Each sample's
// augmentation draws from SampleRng(seed, epoch, position), so the output is
// identical whatever the thread count. Host memory is pinned when LibTorch
// has CUDA.
//
// A data set of tensors (Dataset::tensors(), e.g. tensor_file_dataset.h)
// is batched the same way, row by row: images are rows of x (uint8 times
// 1/255, the bits an image of those bytes gives; float32 as it is) and labels
// rows of y (int64 or float32); such a data set takes no transform and no
// Normalize.
//
// Where built with OpenCV, creating a loader turns its internal threading
// off (process-wide):
// the loader threads already use the cores.
//
// Thread safety: StartEpoch/Next/Stop are called from one consumer thread.
// A Batch's tensors stay valid until the consumer's next Next() or
// StartEpoch() call (they view a reused slot); clone() to keep them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "loader/dataset.h"
#include "loader/transforms.h"

namespace gradsync {

struct LoaderOptions {
  int batch_size = 64;
  int threads = 2;         // loader threads, >= 1
  int prefetch_depth = 2;  // batches in flight per thread, >= 1
  bool drop_last = false;  // drop a short last batch
  uint64_t seed = 0;       // augmentation seed
  // Leave corrupt or unreadable samples out of their batch and count them,
  // instead of failing Next() with an error naming the file.
  bool skip_corrupt = false;
  // Output image shape; 0 = taken from sample 0 after the transform.
  int channels = 0, height = 0, width = 0;
  std::vector<float> mean, std;  // Normalize; empty = ToTensor only
  // Longest Next() waits for one batch before DEADLINE_EXCEEDED.
  absl::Duration batch_timeout = absl::Minutes(5);
  // Most memory the batch slots (threads x prefetch_depth batches) may take;
  // 0 = half of this host's physical memory. Create fails with
  // RESOURCE_EXHAUSTED naming batch_size, prefetch_depth and threads above.
  int64_t max_slot_bytes = 0;
};

struct Batch {
  int64_t index = 0;  // batch number within the epoch
  at::Tensor images;  // [B, C, H, W] float32 (tensors: [B, x's row shape])
  at::Tensor labels;  // [B] int64 (tensors: [B, y's row shape], y's dtype)
  std::vector<int64_t> samples;  // data set indices, in batch order
  int64_t skipped = 0;           // corrupt samples left out of this batch
  double wait_ms = 0;            // consumer time blocked in Next()
  double decode_ms = 0;          // summed over the batch's samples
  double transform_ms = 0;       // summed over the batch's samples
};

class BatchLoader {
 public:
  static absl::StatusOr<std::unique_ptr<BatchLoader>> Create(
      std::shared_ptr<const Dataset> dataset,
      std::shared_ptr<const Transform> transform, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Begins an epoch over `indices` (the rank's shard, in order); abandons
  // whatever is left of the previous one. `first_batch` > 0 resumes the
  // epoch there: earlier batches are skipped, later ones come out exactly as
  // in a full epoch (same numbers, samples and augmentation).
  // INVALID_ARGUMENT for an index outside the data set or a first_batch
  // past the end.
  absl::Status StartEpoch(int64_t epoch, std::vector<int64_t> indices,
                          int64_t first_batch = 0);
  // The next batch: true and `*batch` filled, or false at the end of the
  // epoch. Errors: the first corrupt sample of the batch (unless
  // skip_corrupt), DEADLINE_EXCEEDED after batch_timeout, CANCELLED after
  // Stop().
  absl::StatusOr<bool> Next(Batch* batch);
  // Stops and joins the threads (also mid-epoch). Idempotent.
  void Stop();

  int64_t num_batches() const;
  int64_t skipped_total() const;
  int channels() const { return options_.channels; }
  int height() const { return options_.height; }
  int width() const { return options_.width; }
  // One sample's shape in a batch: {C, H, W} for images, x's row shape for
  // tensors.
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }

 private:
  struct Slot {
    at::Tensor images, labels;
    std::vector<int64_t> samples;
    std::vector<char> valid;
    int64_t batch = -1;
    int size = 0, filled = 0;
    absl::Status error;
    int64_t error_position = -1;
    double decode_ms = 0, transform_ms = 0;
  };

  BatchLoader(std::shared_ptr<const Dataset> dataset,
              std::shared_ptr<const Transform> transform,
              LoaderOptions options);
  absl::Status InferShape();
  // The threads x prefetch_depth batch slots (pinned where CUDA is).
  absl::Status AllocateSlots(bool pin);
  void WorkerLoop();
  // Decodes, transforms and writes one sample into its slot row.
  absl::Status LoadInto(int64_t epoch, int64_t position, int64_t sample,
                        Slot& slot, int row, double* decode_ms,
                        double* transform_ms);
  int64_t BatchOf(int64_t position) const {
    return position / options_.batch_size;
  }

  const std::shared_ptr<const Dataset> dataset_;
  const std::shared_ptr<const Transform> transform_;
  LoaderOptions options_;
  // Set by InferShape: a sample's and a target's shape in a batch, and the
  // targets' type.
  std::vector<int64_t> sample_shape_, target_shape_;
  at::ScalarType target_dtype_ = at::kLong;

  mutable absl::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> indices_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t epoch_batches_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t epoch_positions_ ABSL_GUARDED_BY(mu_) = 0;  // positions to load
  int64_t next_position_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_batch_ ABSL_GUARDED_BY(mu_) = 0;  // the consumer's next
  int64_t released_ ABSL_GUARDED_BY(mu_) = 0;    // batches whose slots are free
  int busy_ ABSL_GUARDED_BY(mu_) = 0;            // threads inside LoadInto
  int64_t skipped_total_ ABSL_GUARDED_BY(mu_) = 0;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gradsync
