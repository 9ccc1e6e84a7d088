// JobSpec defaults and validation. The coordinator applies defaults and then
// validates every submitted spec; errors are INVALID_ARGUMENT naming the
// field (e.g. "job_spec.batch_size must be >= 1 (got 0)").
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync {

// Model names workers know (worker/models must provide each of them).
const std::vector<std::string>& KnownModels();

// Loss names workers know (worker/train/loss.h).
const std::vector<std::string>& KnownLosses();

// Augmentation presets workers know.
const std::vector<std::string>& KnownAugmentations();

// Fills fields left at zero with their documented defaults.
void ApplyJobSpecDefaults(v1::JobSpec* spec);

// Checks a spec (after ApplyJobSpecDefaults). `max_world_size` bounds the
// world size (0 = unbounded). Does not touch the file system.
absl::Status ValidateJobSpec(const v1::JobSpec& spec, int max_world_size);

}  // namespace gradsync
