// Trainer: one rank's training loop. Loads its shard with the BatchLoader,
// runs forward/backward with LibTorch, averages gradients with the Reducer
// (DDP semantics), steps the optimizer, evaluates exactly over the eval
// split at each epoch end (every sample counted once across ranks;
// evaluate.h) and writes checkpoints on rank 0 (worker/model/checkpoint.h).
// With spec.resume_from set, every rank starts from that checkpoint's model,
// optimizer, RNG and position, mid-epoch included (resume.h). After an
// elastic restart (resume_remaining) the shards of the checkpoint's epoch
// already leave out what it committed, so training starts at that epoch's
// batch 0.
//
// Compute runs on GPU `cuda_device` when the communicator is NCCL (which
// needs a LibTorch with CUDA: compute_device.h), on the CPU with gloo. What
// a rank is given and what it gets back: train_context.h.
//
// Thread safety: Train() runs on one thread; `cancel` and the progress
// counters may be touched from others; the callbacks run on Train()'s
// thread.
#pragma once

#include "absl/status/statusor.h"
#include "worker/train/train_context.h"

namespace gradsync {

absl::StatusOr<TrainResult> Train(const TrainContext& context);

}  // namespace gradsync
