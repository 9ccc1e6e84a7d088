// Whether a failed job attempt restarts, as a rule over plain inputs (the
// Coordinator gathers them under its lock and acts on the answer). In
// order: an attempt that failed with the same error as the one before it
// is not restarted again (a deterministic failure would loop); nor one
// whose error is the job's own configuration (INVALID_ARGUMENT,
// PERMISSION_DENIED: a bad path, a model that does not fit the data; a
// model file the workers refuse to run, FAILED_PRECONDITION "model file:"),
// which no restart changes; nor past the restart limit; nor when fewer
// workers could run the next attempt than the job's minimum and it has no
// restart wait (JobSpec.restart_wait_ms 0). Otherwise it
// restarts, waiting for replacement workers when too few remain and the
// job has a restart wait (the Coordinator fails it when the wait ends).
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>

namespace gradsync {

struct FailedAttempt {
  std::string reason;          // why the attempt failed, for messages
  std::string error;           // the failing rank's error ("" if none)
  std::string previous_error;  // the attempt before it's error
  int restarts = 0;            // restarts the job has had
  int max_restarts = 0;
  // Workers that could run the next attempt: the attempt's live workers
  // and idle ones (with a GPU, for backend nccl).
  int available_workers = 0;
  int min_workers = 1;
  int64_t restart_wait_ms = 0;  // how long a restart may wait for workers
};

struct RestartDecision {
  bool restart = false;
  // With restart: too few workers now, so the restart waits for
  // replacements (up to the job's restart wait).
  bool waits_for_workers = false;
  // Without restart: why the job fails (the reason and the rule).
  std::string failure;
};

RestartDecision DecideRestart(const FailedAttempt& attempt);

}  // namespace gradsync
