// The worker's health file: the agent rewrites it after every answered
// heartbeat with "<unix ms> <worker id> <state>", and the container health
// check (`gradsync-worker --check-health`) reads it, so the check needs no
// token and no RPC. Writes are atomic (a temporary file, then rename).
// Thread safety: free functions; one writer per file.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

// Best effort: a failed write is retried by the next heartbeat.
void WriteHealthFile(const std::string& file, const std::string& worker_id,
                     const std::string& state);

// OK (saying which worker and how fresh) when the file was written within
// `max_age`; UNAVAILABLE (stale) or NOT_FOUND (no file yet) otherwise.
absl::StatusOr<std::string> CheckWorkerHealth(const std::string& file,
                                              absl::Duration max_age);

}  // namespace gradsync
