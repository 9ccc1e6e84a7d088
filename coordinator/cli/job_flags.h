// Builds a JobSpec for `gradsync submit` from an optional job file (the
// proto3 JSON form of gradsync.v1.JobSpec, snake_case or camelCase) and the
// command-line flags, which override the file. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// Flags of `gradsync submit`; unset optionals leave the file's value.
struct JobFlags {
  std::string file;
  std::optional<std::string> name, dataset, split, eval_split, model, optimizer,
      augmentation, backend, checkpoint_dir, compression, precision,
      resume_from, loss,
      resume_snapshot,  // JOB or JOB:STEP
      model_file;       // a local TorchScript file, uploaded by Submit
  std::optional<int> epochs, batch_size, loader_threads, prefetch_depth,
      workers, min_workers, max_workers, channels, grad_accumulation,
      max_restarts;
  std::optional<double> lr, momentum, weight_decay,
      restart_wait_s;  // --restart-wait SECONDS
  std::optional<int64_t> seed, checkpoint_interval, collective_timeout_ms,
      step_timeout_ms, bucket_cap_bytes;
  bool no_shuffle = false;
  bool drop_last = false;
};

// INVALID_ARGUMENT for an unreadable or malformed file, an unknown
// optimizer/backend name or a malformed --resume-snapshot. A relative
// dataset path is made absolute against the current directory (a
// "synthetic:<preset>" data set is a name and stays as it is); relative
// checkpoint paths stay relative (each worker's --checkpoint-root).
absl::StatusOr<v1::JobSpec> BuildJobSpec(const JobFlags& flags);

}  // namespace gradsync::cli
