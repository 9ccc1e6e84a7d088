// Reads a job file for `gradsync submit --file`: the proto3 JSON form of
// gradsync.v1.JobSpec (snake_case or camelCase keys), the one schema the
// coordinator, grpcurl and the Python client share. When the file does not
// parse, the error says what was probably meant: a key spelled as a flag
// ("workers", "lr", "checkpoint-dir") names its field
// (world_size.max_workers, optimizer.learning_rate, checkpoint.directory);
// an object given as a string (`"dataset": "data/x"`) lists the object's
// fields. Thread-compatible (plain functions).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// The JobSpec in `path`: INVALID_ARGUMENT naming the file when it cannot be
// read or is not a JobSpec (with the hint above where there is one).
absl::StatusOr<v1::JobSpec> ReadJobFile(const std::string& path);

// The JobSpec in `json`, the same way; errors name no file.
absl::StatusOr<v1::JobSpec> ParseJobSpecJson(const std::string& json);

}  // namespace gradsync::cli
