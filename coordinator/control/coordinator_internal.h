// Helpers shared by the files that implement Coordinator (coordinator.cc,
// recovery.cc, scheduler.cc, failure_detector.cc, job_api.cc,
// worker_api.cc) and its decisions (failure_rules.cc). Private to them: not
// part of the control plane's API. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "coordinator/control/job_state.h"
#include "foundation/store/memory_store.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {
namespace coordinator_internal {

// What one job attempt's rendezvous store may hold: far more than a
// 1,024-rank bootstrap needs (a few keys per rank), far less than a worker
// could fill the coordinator's memory with.
inline constexpr MemoryStoreLimits kAttemptStoreLimits{65536, 64 << 20};
// Barrier names one attempt may use, and their length.
inline constexpr size_t kMaxBarriersPerAttempt = 4096;
inline constexpr size_t kMaxNameBytes = 256;
// Least time between scheduling passes that heartbeats of already idle
// workers trigger (worker_api.cc).
inline constexpr absl::Duration kIdleRescheduleGap = absl::Milliseconds(20);
// Evaluation records in one metrics report.
inline constexpr int kMaxEvalPerReport = 64;
// Log lines one ReportMetrics may carry.
inline constexpr int kMaxLogLinesPerReport = 10000;

inline int64_t UnixMs(absl::Time t) { return absl::ToUnixMillis(t); }

inline std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

// "rank R (worker W on host H)": how reasons and logs name a rank.
inline std::string RankLabel(int rank, const std::string& worker_id,
                             const std::string& host) {
  return absl::StrCat("rank ", rank, " (worker ", worker_id, " on host ", host,
                      ")");
}

// Whether attempt `attempt` of `job` is over: superseded, ended with the
// job, or failed and waiting for its restart (PENDING).
inline bool AttemptOver(const v1::Job& job, int attempt) {
  return attempt != job.attempt() || IsTerminal(job.state()) ||
         job.state() == v1::JOB_STATE_PENDING;
}

inline bool HasGpu(const v1::WorkerInfo& w) {
  for (const v1::Device& d : w.devices()) {
    if (d.kind() == "cuda") return true;
  }
  return false;
}

}  // namespace coordinator_internal
}  // namespace gradsync
