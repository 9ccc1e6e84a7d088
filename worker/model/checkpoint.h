// Checkpoint: what rank 0 writes so a job can resume exactly where it was.
//
// One file per checkpoint, <dir>/model-step-<step>.pt, written atomically
// (write <path>.tmp, then rename). It is a pickled dict in PyTorch's usual
// checkpoint shape, readable with Python's torch.load:
//   "model":     state_dict (parameter and buffer names, no wrapper prefix)
//   "optimizer": optimizer.state_dict() layout: {"state": {index: {...}},
//                "param_groups": [{..., "params": [indices]}]}
//   "epoch", "epoch_batch", "step": where training stands: the next batch to
//                train is batch `epoch_batch` of epoch `epoch`; `step` counts
//                batches trained so far; "world_size", "batch_size": the
//                sharding that position refers to
//   "rng_state": torch.get_rng_state() of the writer (dropout etc.)
//   "scaler":    16-mixed runs only: torch.amp.GradScaler.state_dict()
//                ("scale", "growth_factor", "backoff_factor",
//                "growth_interval", "_growth_tracker")
//   "metadata":  strings (torchrun names RANK, WORLD_SIZE, ..., job id, spec)
//
// Restoring takes the bytes of such a file (rank 0 reads them and broadcasts
// them, so hosts need no shared file system) and loads model, optimizer
// state and the torch RNG; it fails with INVALID_ARGUMENT naming the first
// parameter whose name or shape does not match the model.
//
// Thread safety: none; call from the training thread.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/model/trainable_model.h"

namespace gradsync {

// torch.amp.GradScaler's state (its defaults here); see
// worker/train/grad_scaler.h.
struct ScalerState {
  double scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  int64_t growth_tracker = 0;  // clean steps since the scale last changed
};

struct TrainPosition {
  int64_t epoch = 0;        // epoch of the next batch
  int64_t epoch_batch = 0;  // its index within that epoch
  int64_t step = 0;         // batches trained so far
  // The writer's world size and per-rank batch size: a mid-epoch position
  // only means the same samples under the same sharding.
  int64_t world_size = 1;
  int64_t batch_size = 0;
  // The loss scaler of a 16-mixed run ("scaler"); empty otherwise.
  std::optional<ScalerState> scaler;
};

// Writes a checkpoint of `model`, `optimizer` and the torch CPU RNG into
// `dir` (created if missing) as CheckpointFileName(tag, step); returns the
// file's path. The file is written beside as <name>.tmp, created afresh
// (O_EXCL, never through a link), fsync'ed, then renamed into place.
absl::StatusOr<std::string> WriteCheckpoint(
    TrainableModel& model, torch::optim::Optimizer& optimizer,
    const TrainPosition& position,
    const std::map<std::string, std::string>& metadata, const std::string& dir,
    const std::string& tag = "");

// "model-step-<step>.pt", or "model-<tag>-step-<step>.pt" with a tag (a
// job's id, so that jobs sharing a directory keep apart).
std::string CheckpointFileName(const std::string& tag, int64_t step);

// `path` itself if it names a file; the checkpoint with the highest step if
// it names a directory. NOT_FOUND when neither exists or the directory holds
// no checkpoint; FAILED_PRECONDITION when it holds several jobs' (tags),
// naming them: pick one file.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path);

// The largest checkpoint ReadFileBytes reads by default.
inline constexpr int64_t kMaxCheckpointBytes = int64_t{16} << 30;

// A regular file's bytes, opened as RegularFile::Open (NOT_FOUND,
// FAILED_PRECONDITION); RESOURCE_EXHAUSTED past `max_bytes`.
absl::StatusOr<std::vector<char>> ReadFileBytes(
    const std::string& path, int64_t max_bytes = kMaxCheckpointBytes);

// Loads a checkpoint's bytes into `model` and `optimizer` (which must be
// the same model and optimizer type as the writer's) and sets the torch CPU
// RNG. `name` is used in error messages. Before anything is loaded, each
// key of `must_match` must have that value in the checkpoint's metadata (a
// missing key counts as ""): FAILED_PRECONDITION naming the key and both
// values otherwise (a checkpoint of another model file).
absl::StatusOr<TrainPosition> RestoreCheckpoint(
    const std::vector<char>& bytes, const std::string& name,
    TrainableModel& model, torch::optim::Optimizer& optimizer,
    const std::map<std::string, std::string>& must_match = {});

}  // namespace gradsync
