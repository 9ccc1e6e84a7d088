// Whether a failed job attempt restarts, as a rule over plain inputs (the
// Coordinator gathers them under its lock and acts on the answer). In
// order: an attempt that failed with the same error as the one before it
// is not restarted again (a deterministic failure would loop); nor one
// whose error is the job's own configuration (INVALID_ARGUMENT,
// PERMISSION_DENIED: a bad path, a model that does not fit the data),
// which no restart changes; nor past the restart limit; nor when fewer
// workers could run the next attempt than the job's minimum. Otherwise it
// restarts.
// Thread safety: a pure function.
#pragma once

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
};

struct RestartDecision {
  bool restart = false;
  // Without restart: why the job fails (the reason and the rule).
  std::string failure;
};

RestartDecision DecideRestart(const FailedAttempt& attempt);

}  // namespace gradsync
