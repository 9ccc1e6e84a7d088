#include "coordinator/control/job_state.h"

#include "absl/strings/match.h"

namespace gradsync {

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

bool IsAllowedTransition(v1::JobState from, v1::JobState to) {
  switch (from) {
    case v1::JOB_STATE_UNSPECIFIED:
      return to == v1::JOB_STATE_PENDING;
    case v1::JOB_STATE_PENDING:
      return to == v1::JOB_STATE_RENDEZVOUS || to == v1::JOB_STATE_FAILED ||
             to == v1::JOB_STATE_CANCELLED;
    case v1::JOB_STATE_RENDEZVOUS:
      return to == v1::JOB_STATE_RUNNING || to == v1::JOB_STATE_PENDING ||
             to == v1::JOB_STATE_FAILED || to == v1::JOB_STATE_CANCELLED;
    case v1::JOB_STATE_RUNNING:
      // Back to PENDING: the attempt failed and the job restarts.
      return to == v1::JOB_STATE_PENDING || IsTerminal(to);
    default:
      return false;
  }
}

namespace {

std::string WithoutPrefix(std::string name, absl::string_view prefix) {
  if (absl::StartsWith(name, prefix)) name = name.substr(prefix.size());
  return name;
}

}  // namespace

std::string JobStateName(v1::JobState state) {
  return WithoutPrefix(v1::JobState_Name(state), "JOB_STATE_");
}

std::string WorkerStateName(v1::WorkerState state) {
  return WithoutPrefix(v1::WorkerState_Name(state), "WORKER_STATE_");
}

v1::AttemptRecord* FindAttemptRecord(v1::Job& job, int attempt) {
  for (v1::AttemptRecord& a : *job.mutable_attempts()) {
    if (a.attempt() == attempt) return &a;
  }
  return nullptr;
}

}  // namespace gradsync
