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

std::string JobStateName(v1::JobState state) {
  std::string name = v1::JobState_Name(state);
  constexpr absl::string_view kPrefix = "JOB_STATE_";
  if (absl::StartsWith(name, kPrefix)) name = name.substr(kPrefix.size());
  return name;
}

v1::AttemptRecord* FindAttemptRecord(v1::Job& job, int attempt) {
  for (v1::AttemptRecord& a : *job.mutable_attempts()) {
    if (a.attempt() == attempt) return &a;
  }
  return nullptr;
}

}  // namespace gradsync
