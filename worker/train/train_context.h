// TrainContext: everything one rank's training loop (trainer.h) is given:
// the spec, its place in the job, the communicator, where its shards come
// from and where its reports go; TrainResult: what it gives back.
// Thread safety: filled in before Train() and read-only during it, except
// the atomics it points to (cancel, progress), which other threads may
// touch.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "loader/dataset.h"
#include "worker/comm/communicator.h"
#include "worker/train/step_profiler.h"
#include "worker/train/train_spec.h"

namespace gradsync {

class HostToDevice;  // worker/train/device_feeder.h

inline constexpr char kModelFileMetadataKey[] = "model_file_sha256";

struct TrainContext {
  TrainSpec spec;
  int rank = 0;
  int world_size = 1;
  // The splits' sample counts: the coordinator's, or the rank runner's
  // where there is no coordinator.
  int64_t train_samples = 0;
  int64_t eval_samples = 0;
  // The splits, when whoever counted them here opened them to count
  // (worker/rank/rank_runner.h); null: the trainer opens them and checks
  // their sizes against the counts.
  std::shared_ptr<const Dataset> train_set, eval_set;
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
  // After an elastic restart: the shards of the checkpoint's epoch already
  // leave out what it committed, so training starts at that epoch's batch 0
  // (trainer.h).
  bool resume_remaining = false;
  // When set, every rank resumes, and rank 0 gets the bytes of the
  // checkpoint here (a snapshot downloaded from the coordinator) instead of
  // reading spec.resume_from; `resume_name` names it in errors ("the
  // coordinator's snapshot of job-000001 step 40").
  std::function<absl::StatusOr<std::vector<char>>()> read_resume;
  std::string resume_name;
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
  // When set, a model file's bytes (spec.model_file) pass this before they
  // load: the agent checks their SHA-256 against the job's digest.
  std::function<absl::Status(absl::string_view bytes)> verify_model_file;
  // Called (on a watchdog thread) when the model runs past
  // spec.step_timeout (step_deadline.h); the training thread is then still
  // inside the model and may never return. Null: EndProcessAfterOverrun.
  std::function<void(const absl::Status& overrun)> on_step_overrun;
  // Written into checkpoints (torchrun names, job id, ...); under
  // kModelFileMetadataKey the SHA-256 of the job's model file, which a
  // resume must match (resume.h).
  std::map<std::string, std::string> metadata;
};

struct TrainResult {
  int64_t steps = 0;
  double accuracy = -1;    // last evaluation; -1 without an eval split
  std::string checkpoint;  // last checkpoint written (rank 0)
  // Rank 0 of a job that trained a model file: the trained module as
  // TorchScript, written beside the last checkpoint.
  std::string torchscript;
};

}  // namespace gradsync
