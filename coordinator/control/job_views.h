// Abridged copies of a job record, for where whole records would multiply:
// a job event per state change (WatchJob) and every job of a ListJobs page.
// GetJob returns the whole record.
//
// An abridged job has no ledger and only its newest kAbridgedTransitions
// transitions and kAbridgedAttempts attempts, and says so (abridged = true),
// so its size no longer grows with the job's history: one job with a
// thousand failed attempts cannot make watching or listing fail.
// Thread safety: pure functions.
#pragma once

#include "gradsync/v1/job.pb.h"

namespace gradsync {

inline constexpr int kAbridgedTransitions = 4;
inline constexpr int kAbridgedAttempts = 2;

v1::Job Abridged(v1::Job job);

}  // namespace gradsync
