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
// needs a LibTorch with CUDA: ComputeDevice), on the CPU with gloo.
//
// Thread safety: Train() runs on one thread; `cancel` and the progress
// counters may be touched from others; the callbacks run on Train()'s
// thread.
#pragma once

#include <torch/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"
#include "worker/train/step_profiler.h"
#include "worker/train/train_spec.h"

namespace gradsync {

class HostToDevice;  // worker/train/device_feeder.h

struct TrainContext {
  TrainSpec spec;
  int rank = 0;
  int world_size = 1;
  int64_t train_samples = 0;  // what the coordinator counted
  int64_t eval_samples = 0;
  Communicator* comm = nullptr;
  int cuda_device = 0;
  // The rank's sample indices for an epoch (train or eval split).
  std::function<absl::StatusOr<std::vector<int64_t>>(int epoch, bool eval)>
      shard;
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EvalReport&)> on_eval;  // rank 0
  // Rank 0, after each checkpoint it wrote (which commits the samples
  // trained before it; coordinator/control/sample_ledger.h).
  std::function<void(const CheckpointReport&)> on_checkpoint;
  bool resume_remaining = false;  // see above
  // When set, rank 0 gets the bytes of the checkpoint to resume from here
  // (a snapshot downloaded from the coordinator) instead of reading
  // spec.resume_from.
  std::function<absl::StatusOr<std::vector<char>>()> read_resume;
  // When set, every trained batch is appended to this file as a line
  // "<epoch> <step> <sample index>..." (tests check exactly-once with it).
  std::string sample_trace;
  std::atomic<bool>* cancel = nullptr;
  std::atomic<int64_t>* step = nullptr;  // progress for heartbeats
  std::atomic<int>* epoch = nullptr;
  int checksum_every = 50;  // steps between cross-rank parameter checks
  // Steps to record with LibTorch's profiler (step_profiler.h); none when
  // unset.
  ProfileWindow profile;
  // Tests only: host-device copies to use in place of the GPU's
  // (device_feeder.h), so the CPU runs the GPU's feeding and loss-reading
  // path. Null: the device decides (a copy stream on CUDA, none on CPU).
  HostToDevice* transfers = nullptr;
  // Written into checkpoints (torchrun names, job id, ...).
  std::map<std::string, std::string> metadata;
};

struct TrainResult {
  int64_t steps = 0;
  double accuracy = -1;    // last evaluation; -1 without an eval split
  std::string checkpoint;  // last checkpoint written (rank 0)
};

absl::StatusOr<TrainResult> Train(const TrainContext& context);

// Where a rank of `backend` computes: cuda:`cuda_device` for NCCL, the CPU
// for gloo. FAILED_PRECONDITION for NCCL when this LibTorch has no CUDA (an
// nccl job never silently trains on the CPU).
absl::StatusOr<torch::Device> ComputeDevice(Backend backend, int cuda_device);

}  // namespace gradsync
