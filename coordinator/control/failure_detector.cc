// Coordinator, failure detector: dead workers (missed heartbeats) and
// stalled ranks (behind a collective the others wait in).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/failure_rules.h"
#include "coordinator/control/job_state.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

using coordinator_internal::FormatSeconds;
using coordinator_internal::RankLabel;

void Coordinator::DetectorLoop() {
  const absl::Duration period =
      std::max(options_.heartbeat_timeout / 8, absl::Milliseconds(5));
  while (!stop_detector_.WaitForNotificationWithTimeout(period)) {
    SweepDeadWorkers(absl::Now());
  }
}

// ---------------------------------------------------------------- helpers

void Coordinator::SweepDeadWorkers(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (auto it = workers_.begin(); it != workers_.end();) {
    WorkerEntry& w = it->second;
    const absl::Duration silent = now - w.last_heartbeat;
    const bool was_dead = w.info.state() == v1::WORKER_STATE_DEAD;
    const Silence verdict =
        JudgeSilence(silent, options_.heartbeat_timeout, was_dead);
    if (verdict == Silence::kForget) {
      it = workers_.erase(it);
      continue;
    }
    if (verdict == Silence::kAlive || was_dead) {
      ++it;
      continue;
    }
    w.info.set_state(v1::WORKER_STATE_DEAD);
    LogLine("coordinator", absl::StrFormat("worker %s on %s declared dead",
                                           w.info.worker_id(), w.info.host()));
    if (!w.job_id.empty()) {
      // (Named from the worker: a new attempt may hold other ranks.)
      LoseWorker(
          w, absl::StrCat(
                 RankLabel(w.rank, w.info.worker_id(), w.info.host()),
                 " missed heartbeats for ", FormatSeconds(silent), " (timeout ",
                 FormatSeconds(options_.heartbeat_timeout), "); last step ",
                 w.info.step(), ", epoch ", w.info.epoch() + 1));
    }
    ++it;
  }
  // Restored running jobs whose workers did not all come back in time.
  std::vector<JobEntry*> lapsed;  // (failing them changes active_)
  for (auto& [seq, entry] : active_) {
    if (!entry->awaiting_reconnect.empty() &&
        now >= entry->reconnect_deadline &&
        entry->job.state() == v1::JOB_STATE_RUNNING) {
      lapsed.push_back(entry);
    }
  }
  for (JobEntry* e : lapsed) {
    JobEntry& entry = *e;
    std::vector<std::string> missing;
    for (const v1::RankAssignment& r : entry.job.ranks()) {
      if (entry.awaiting_reconnect.count(r.worker_id()) > 0) {
        missing.push_back(RankLabel(r.rank(), r.worker_id(), r.host()));
      }
    }
    entry.awaiting_reconnect.clear();
    FailAttempt(entry,
                absl::StrCat(absl::StrJoin(missing, ", "),
                             " did not re-register within ",
                             FormatSeconds(options_.reconnect_grace),
                             " after the coordinator restarted"),
                "");
  }
  DetectStalls(now);
  // Restarts whose wait for the old attempt's workers has expired.
  Schedule();
  EnforceRetention(now);
}

void Coordinator::DetectStalls(absl::Time now) {
  const absl::Duration patience = 3 * options_.heartbeat_interval;
  for (auto& [seq, e] : active_) {
    JobEntry& entry = *e;
    v1::Job& job = entry.job;
    if (job.state() != v1::JOB_STATE_RUNNING) continue;
    std::vector<RankProgress> ranks;
    for (const v1::RankAssignment& r : job.ranks()) {
      auto w = workers_.find(r.worker_id());
      if (w == workers_.end() || w->second.job_id != job.id()) continue;
      const WorkerEntry& worker = w->second;
      ranks.push_back({r.rank(), r.worker_id(), r.host(),
                       worker.info.collective_seq(), worker.info.step(),
                       now - worker.seq_since});
    }
    const Stall found = FindStall(ranks, patience);
    const std::string& stall = found.text;
    const std::string& key = found.key;
    // The text follows every tick; a new stall or its end is also an event.
    job.set_stall(stall);
    if (key == entry.stall_key) continue;
    entry.stall_key = key;
    LogLine("coordinator",
            absl::StrFormat(
                "job %s %s", job.id(),
                stall.empty() ? "no longer stalled" : "stalled: " + stall));
    PublishJob(entry);
  }
}

}  // namespace gradsync
