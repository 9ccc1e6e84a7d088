// The job state machine:
//   PENDING -> RENDEZVOUS -> RUNNING -> SUCCEEDED | FAILED | CANCELLED
//   PENDING | RENDEZVOUS -> FAILED | CANCELLED
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "gradsync/v1/job.pb.h"

namespace gradsync {

bool IsTerminal(v1::JobState state);
bool IsAllowedTransition(v1::JobState from, v1::JobState to);
// "PENDING", "RUNNING", ... (the enum name without its prefix).
std::string JobStateName(v1::JobState state);

}  // namespace gradsync
