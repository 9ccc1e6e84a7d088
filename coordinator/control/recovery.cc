// Coordinator, recovery: restoring jobs after a coordinator restart,
// re-adopting workers, and failed attempts (restart or fail).
#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/restart_policy.h"
#include "coordinator/wire/secrets.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

using coordinator_internal::FormatSeconds;
using coordinator_internal::HasGpu;
using coordinator_internal::UnixMs;

absl::Status Coordinator::Restore() {
  if (job_store_ == nullptr) return absl::OkStatus();
  absl::StatusOr<std::vector<v1::Job>> jobs = job_store_->LoadAll();
  if (!jobs.ok()) return jobs.status();
  absl::StatusOr<std::map<std::string, std::string>> keys =
      job_store_->LoadWorkerKeys();
  if (!keys.ok()) return keys.status();
  absl::StatusOr<std::map<std::string, v1::JobTrail>> trails =
      job_store_->LoadTrails();
  if (!trails.ok()) return trails.status();
  absl::MutexLock lock(&mu_);
  restored_keys_ = std::move(*keys);
  const absl::Time now = absl::Now();
  for (v1::Job& job : *jobs) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(absl::string_view(job.id()).substr(4), &n) ||
        n <= 0 || by_seq_.count(n) > 0) {
      LogLine("coordinator",
              absl::StrFormat("stored job id '%s' is not one this "
                              "coordinator gives; ignored",
                              job.id()));
      continue;
    }
    next_job_ = std::max(next_job_, n + 1);
    JobEntry& entry = jobs_[job.id()];
    entry.queue_seq = n;
    entry.job = std::move(job);
    Index(entry);
    for (const v1::EvalMetrics& e : entry.job.metrics().eval()) {
      entry.metrics.AddEval(e);
    }
    if (auto trail = trails->find(entry.job.id()); trail != trails->end()) {
      entry.metrics.RestoreCurve(trail->second);
      entry.logs.LoadFrom(trail->second);
    }
    v1::Job& j = entry.job;
    // A restart that was waiting for workers (or a job the coordinator
    // restarted during its rendezvous, below) gives the workers the
    // reconnect grace to register again before too few of them fail it.
    entry.restart_reason = j.message();
    entry.restored_grace_until = now + options_.reconnect_grace;
    if (IsTerminal(j.state())) {
      entry.events->Close();
    } else if (j.state() == v1::JOB_STATE_RENDEZVOUS) {
      // The attempt's store is gone with the old process: run it again
      // (no workers are known yet to judge availability by).
      const std::string reason = absl::StrCat(
          "the coordinator restarted during the rendezvous of "
          "attempt ",
          j.attempt());
      if (j.restarts() >= j.spec().max_restarts()) {
        Transition(entry, v1::JOB_STATE_FAILED,
                   absl::StrCat(reason, "; restart limit (",
                                j.spec().max_restarts(), ") reached"));
      } else {
        j.set_restarts(j.restarts() + 1);
        Transition(entry, v1::JOB_STATE_PENDING,
                   absl::StrCat(reason, "; restart ", j.restarts(), " of ",
                                j.spec().max_restarts()));
      }
    } else if (j.state() == v1::JOB_STATE_RUNNING) {
      // The ranks train on; wait for their workers to re-register.
      entry.store = std::make_shared<MemoryStore>(
          coordinator_internal::kAttemptStoreLimits);
      entry.barriers = std::make_shared<BarrierTable>(
          j.world_size(), coordinator_internal::kMaxBarriersPerAttempt,
          coordinator_internal::kMaxNameBytes);
      std::set<int> completed;
      if (const v1::AttemptRecord* a = FindAttemptRecord(j, j.attempt())) {
        completed.insert(a->completed_ranks().begin(),
                         a->completed_ranks().end());
      }
      for (const v1::RankAssignment& r : j.ranks()) {
        entry.joined.insert(r.rank());
        if (completed.count(r.rank()) > 0) {
          entry.completed.insert(r.rank());
        } else {
          entry.awaiting_reconnect.insert(r.worker_id());
        }
      }
      entry.reconnect_deadline = now + options_.reconnect_grace;
      if (j.master_port() > 0) ports_.Reserve(j.master_addr(), j.master_port());
      LogLine("coordinator",
              absl::StrFormat("restored running job %s (attempt %d); "
                              "waiting %s for %d worker(s) to re-register",
                              j.id(), j.attempt(),
                              FormatSeconds(options_.reconnect_grace),
                              entry.awaiting_reconnect.size()));
    }
  }
  EnforceRetention(now);
  return absl::OkStatus();
}

Coordinator::WorkerEntry* Coordinator::Readopt(
    const v1::RegisterWorkerRequest& request, absl::Time now) {
  const v1::ResumeTask& r = request.resume();
  auto key = restored_keys_.find(r.task().worker_id());
  if (key == restored_keys_.end() || !KeysEqual(key->second, r.worker_key()) ||
      workers_.count(r.task().worker_id()) > 0) {
    return nullptr;
  }
  auto job = jobs_.find(r.task().job_id());
  if (job == jobs_.end()) return nullptr;
  JobEntry& entry = job->second;
  const v1::Job& j = entry.job;
  if (j.state() != v1::JOB_STATE_RUNNING || j.attempt() != r.task().attempt() ||
      r.task().rank() < 0 || r.task().rank() >= j.ranks_size() ||
      j.ranks(r.task().rank()).worker_id() != r.task().worker_id() ||
      entry.awaiting_reconnect.erase(r.task().worker_id()) == 0) {
    return nullptr;
  }
  WorkerEntry& w = workers_[r.task().worker_id()];
  w.seq = next_worker_++;
  w.key = key->second;
  w.last_heartbeat = now;
  w.free_ports.assign(request.free_ports().begin(), request.free_ports().end());
  w.job_id = j.id();
  w.attempt = j.attempt();
  w.rank = r.task().rank();
  w.info.set_worker_id(r.task().worker_id());
  w.info.set_host(request.host());
  *w.info.mutable_devices() = request.devices();
  w.info.set_state(v1::WORKER_STATE_RUNNING);
  w.info.set_job_id(j.id());
  w.info.set_rank(r.task().rank());
  w.info.set_registered_unix_ms(UnixMs(now));
  w.info.set_checkpoint_root(request.checkpoint_root());
  LogLine("coordinator",
          absl::StrFormat("worker %s re-registered from %s with its task: "
                          "job %s attempt %d rank %d",
                          r.task().worker_id(), request.host(), j.id(),
                          j.attempt(), r.task().rank()));
  return &w;
}

void Coordinator::FailAttempt(JobEntry& entry, const std::string& reason,
                              const std::string& dead_worker,
                              const std::string& error) {
  v1::Job& job = entry.job;
  const absl::Time now = absl::Now();
  // The error of the attempt before this one (attempts are recorded in
  // order), read before this one's is set.
  std::string previous_error;
  for (int i = 1; i < job.attempts_size(); ++i) {
    if (job.attempts(i).attempt() == job.attempt()) {
      previous_error = job.attempts(i - 1).error();
    }
  }
  if (v1::AttemptRecord* a = FindAttemptRecord(job, job.attempt())) {
    a->set_ended_unix_ms(UnixMs(now));
    a->set_outcome(reason);
    a->set_error(error);
  }
  // Who could run the next attempt: this attempt's other live workers and
  // the idle ones (with a GPU, for backend nccl).
  const bool needs_gpu = job.spec().backend() == v1::BACKEND_NCCL;
  std::set<std::string> survivors;
  int available = 0;
  for (auto& [id, w] : workers_) {
    if (w.info.state() == v1::WORKER_STATE_DEAD || id == dead_worker) continue;
    const bool in_attempt = w.job_id == job.id() && w.attempt == job.attempt();
    if (in_attempt) survivors.insert(id);
    const bool idle =
        w.job_id.empty() && w.info.state() == v1::WORKER_STATE_IDLE;
    if ((in_attempt || idle) && (!needs_gpu || HasGpu(w.info))) ++available;
  }
  const int max_restarts = job.spec().max_restarts();
  FailedAttempt failed;
  failed.reason = reason;
  failed.error = error;
  failed.previous_error = previous_error;
  failed.restarts = job.restarts();
  failed.max_restarts = max_restarts;
  failed.available_workers = available;
  failed.min_workers = job.spec().world_size().min_workers();
  failed.restart_wait_ms = job.spec().restart_wait_ms();
  const RestartDecision d = DecideRestart(failed);
  if (!d.restart) {
    Transition(entry, v1::JOB_STATE_FAILED, d.failure);
    return;
  }
  // Replacements may register until then (the scheduler fails the job
  // once it has passed with too few workers).
  const absl::Duration wait = absl::Milliseconds(job.spec().restart_wait_ms());
  job.set_replacement_deadline_unix_ms(
      wait > absl::ZeroDuration() ? UnixMs(now + wait) : 0);
  job.set_restarts(job.restarts() + 1);
  entry.awaiting_release = std::move(survivors);
  entry.restart_deadline =
      now + absl::Milliseconds(job.spec().collective_timeout_ms()) +
      2 * options_.heartbeat_timeout;
  entry.restart_reason = reason;
  const absl::Status over = absl::AbortedError(absl::StrCat(
      "job ", job.id(), " attempt ", job.attempt(), " failed: ", reason));
  if (entry.store) entry.store->Close(over);
  if (entry.barriers) entry.barriers->Close(over);
  if (job.master_port() > 0)
    ports_.Release(job.master_addr(), job.master_port());
  job.set_master_port(0);
  Transition(
      entry, v1::JOB_STATE_PENDING,
      absl::StrCat(
          "attempt ", job.attempt(), " failed: ", reason, "; restart ",
          job.restarts(), " of ", max_restarts,
          job.resume_checkpoint().empty()
              ? ", from the start (no checkpoint committed)"
              : absl::StrCat(", from ", job.resume_checkpoint(), " (step ",
                             job.resume_step(), ")"),
          d.waits_for_workers
              ? absl::StrCat("; waiting up to ", FormatSeconds(wait), " for ",
                             failed.min_workers - failed.available_workers,
                             " more worker(s)")
              : ""));
}

void Coordinator::LoseWorker(WorkerEntry& w, const std::string& what) {
  if (w.job_id.empty()) return;
  JobEntry& entry = jobs_.at(w.job_id);
  if (!coordinator_internal::AttemptOver(entry.job, w.attempt)) {
    if (v1::AttemptRecord* a =
            FindAttemptRecord(entry.job, entry.job.attempt())) {
      a->set_failed_rank(w.rank);
    }
    FailAttempt(entry, what, w.info.worker_id());
  } else {
    NoteLateDeath(entry, w.attempt, what);
  }
  Released(w.job_id, w.info.worker_id());
  w.job_id.clear();
}

void Coordinator::NoteLateDeath(JobEntry& entry, int attempt,
                                const std::string& death) {
  // Another rank's error (a connection reset, say) usually ends the attempt
  // before the dead worker's heartbeats time out: name it afterwards.
  v1::AttemptRecord* a = FindAttemptRecord(entry.job, attempt);
  if (a != nullptr && !a->outcome().empty()) {
    absl::StrAppend(a->mutable_outcome(), "; then ", death);
  }
  if (attempt == entry.job.attempt() &&
      entry.job.state() == v1::JOB_STATE_PENDING) {
    absl::StrAppend(&entry.restart_reason, "; then ", death);
  }
  Persist(entry);
}

void Coordinator::Released(const std::string& job_id,
                           const std::string& worker_id) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second.awaiting_release.erase(worker_id);
}

}  // namespace gradsync
