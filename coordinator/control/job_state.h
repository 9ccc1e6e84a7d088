// The job state machine:
//   PENDING -> RENDEZVOUS -> RUNNING -> SUCCEEDED | FAILED | CANCELLED
//   PENDING | RENDEZVOUS -> FAILED | CANCELLED
//   RENDEZVOUS | RUNNING -> PENDING (a failed attempt restarts)
// and the job's per-attempt records; and the names of job and worker states
// as people read them.
// Pure functions; thread-compatible (the caller owns the Job).
#pragma once

#include <string>

#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

bool IsTerminal(v1::JobState state);
bool IsAllowedTransition(v1::JobState from, v1::JobState to);
// "PENDING", "RUNNING", ... (the enum name without its prefix).
std::string JobStateName(v1::JobState state);
// "IDLE", "RUNNING", "DEAD", ... (the enum name without its prefix).
std::string WorkerStateName(v1::WorkerState state);
// The record of attempt `attempt` (Job.attempts), or null when there is
// none yet.
v1::AttemptRecord* FindAttemptRecord(v1::Job& job, int attempt);

}  // namespace gradsync
