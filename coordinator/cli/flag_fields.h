// Which flag of `gradsync submit` sets which JobSpec field: one table for
// naming the flag in the coordinator's errors (which name the field) and
// the field in a job file's errors (where keys are spelled as flags).
// Thread-safe (immutable data).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gradsync::cli {

struct FlagField {
  const char* flag;   // "--batch-size"
  const char* field;  // "batch_size" (a dotted path for nested fields)
};
const std::vector<FlagField>& SubmitFlagFields();

// The flag that sets the field an error message starts with
// ("job_spec.batch_size must be ..." or "checkpoint.directory ..."), or ""
// when none does.
std::string FlagOfError(absl::string_view message);

}  // namespace gradsync::cli
