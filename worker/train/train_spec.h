// What one rank trains (TrainSpec) and what it reports while training
// (StepReport, EvalReport, CheckpointReport): plain values, so the data
// plane needs no Protobuf. The agent fills a TrainSpec from the job's
// v1::JobSpec and turns the reports into v1 metrics
// (worker/agent/task_convert.h); the field meanings are those of
// proto/gradsync/v1/job.proto and metrics.proto.
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "loader/dataset.h"

namespace gradsync {

enum class OptimizerKind { kAdam, kSgd };
enum class WireCompression { kNone, kFp16, kBf16 };
// Lightning's "32", "bf16-mixed", "16-mixed" (worker/train/precision.h).
enum class Precision { k32, kBf16Mixed, k16Mixed };
// PyTorch's loss functions by their functional names (worker/train/loss.h).
enum class LossKind { kCrossEntropy, kNll, kMse, kBceWithLogits };

struct TrainSpec {
  // Data: <dataset_path>/<split>/<class>/<file> (ImageFolder layout).
  std::string dataset_path;
  std::string split = "train";
  std::string eval_split;  // empty = no evaluation
  // This host's data roots (data_roots.h: the splits and every link in them
  // must resolve under one; empty: anywhere) and image size limits.
  DatasetAccess dataset_access;
  int channels = 0;  // 0 = as stored, 1 = grayscale, 3 = RGB
  std::string augmentation = "none";
  int loader_threads = 2;
  int prefetch_depth = 2;
  // Model and optimisation: a built-in model's name, or (model_file set)
  // a TorchScript file on this host, checked before it runs
  // (worker/model/script_model.h); `model` then names it in logs.
  std::string model;
  std::string model_file;
  LossKind loss = LossKind::kCrossEntropy;  // unless the model defines one
  int epochs = 1;
  int batch_size = 1;  // per rank
  int64_t seed = 0;
  OptimizerKind optimizer = OptimizerKind::kAdam;
  double learning_rate = 1e-3;
  double momentum = 0;
  double weight_decay = 0;
  Precision precision = Precision::k32;
  // Gradient synchronisation (DDP).
  int grad_accumulation_steps = 1;
  WireCompression compression = WireCompression::kNone;
  int64_t bucket_cap_bytes = 0;  // 0 = the reducer's default
  // Longest the model may take over one step's forward, loss and backward
  // (or the channels-last probe, or one evaluation batch) before the rank
  // gives up on it (step_deadline.h); zero: no limit.
  absl::Duration step_timeout = absl::ZeroDuration();
  // Checkpoints (rank 0 writes them).
  std::string checkpoint_directory;  // empty = none
  // Names the files (checkpoint.h, CheckpointFileName): the job's id, so
  // that jobs sharing a directory keep apart; empty: model-step-<n>.pt.
  std::string checkpoint_tag;
  int64_t checkpoint_interval_steps = 0;  // 0 = only at the end
  std::string resume_from;  // non-empty: every rank takes part in a resume
  // One line describing the whole job, written into checkpoints.
  std::string description;
};

// One training step of one rank; times in wall-clock milliseconds.
struct StepReport {
  int rank = 0;
  int epoch = 0;
  int64_t step = 0;  // global step of this rank, from 1
  int64_t steps_per_epoch = 0;
  double loss = 0;
  double samples_per_sec = 0;
  double data_wait_ms = 0;
  // forward_ms + backward_ms + optimizer_ms: zeroing the gradients, forward
  // and loss; backward with the reducer's hooks and the wait for the last
  // buckets less allreduce_ms; unscaling and the optimizer step. On CUDA
  // these are host times (work queued) and the loss read waits for the
  // device.
  double compute_ms = 0;
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double allreduce_ms = 0;        // exposed (not overlapped)
  double allreduce_total_ms = 0;  // including overlapped
  double step_ms = 0;
  int64_t time_unix_ms = 0;
  int64_t skipped_samples = 0;  // corrupt files skipped so far
  double param_checksum = 0;    // 0 except on checksum steps
  // 16-mixed: the loss scale this step used, and whether its gradients
  // overflowed so every rank skipped the optimizer step (grad_scaler.h).
  double loss_scale = 0;
  bool step_skipped = false;
};

// Evaluation at an epoch's end, over every rank's part (rank 0 reports).
struct EvalReport {
  int epoch = 0;
  double accuracy = 0;  // fraction in [0, 1]
  double loss = 0;
  int64_t samples = 0;  // every evaluation sample counted exactly once
};

// A checkpoint rank 0 wrote: it commits what was trained before it.
struct CheckpointReport {
  std::string path;
  int epoch = 0;
  int64_t epoch_batch = 0;  // next batch of `epoch` to train
  int64_t step = 0;
};

}  // namespace gradsync
