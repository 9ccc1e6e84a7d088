// Coordinator: construction, shutdown, lookups and the job state machine
// (Transition, persistence). The rest of the class lives in recovery.cc,
// scheduler.cc, failure_detector.cc, job_api.cc and worker_api.cc.
#include "coordinator/control/coordinator.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/job_views.h"
#include "coordinator/control/sample_ledger.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

using coordinator_internal::RankLabel;
using coordinator_internal::UnixMs;

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    CoordinatorOptions options, std::unique_ptr<JobStore> store) {
  if (options.heartbeat_timeout <= absl::ZeroDuration() ||
      options.heartbeat_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "heartbeat interval and timeout must be positive");
  }
  if (options.port_range_first < 1 || options.port_range_last > 65535 ||
      options.port_range_first > options.port_range_last) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid data-plane port range ", options.port_range_first,
                     "-", options.port_range_last));
  }
  std::unique_ptr<Coordinator> c(
      new Coordinator(std::move(options), std::move(store)));
  if (c->job_store_ != nullptr) {
    c->persister_ = std::make_unique<JobPersister>(
        c->job_store_.get(),
        [raw = c.get()](const std::string& job_id, const absl::Status& s) {
          raw->OnPersisted(job_id, s);
        });
  }
  if (absl::Status s = c->Restore(); !s.ok()) return s;
  if (c->options_.run_failure_detector) {
    c->detector_ = std::thread([raw = c.get()] { raw->DetectorLoop(); });
  }
  return c;
}

Coordinator::Coordinator(CoordinatorOptions options,
                         std::unique_ptr<JobStore> store)
    : options_(std::move(options)),
      job_store_(std::move(store)),
      incarnation_(options_.incarnation > 0
                       ? static_cast<uint32_t>(options_.incarnation & 0xffff)
                       : std::random_device{}() & 0xffff),
      ports_(options_.port_range_first, options_.port_range_last) {}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
    stopping_ = true;
    const absl::Status down =
        absl::UnavailableError("coordinator is shutting down");
    for (auto& [id, entry] : jobs_) {
      if (entry.store) entry.store->Close(down);
      if (entry.barriers) entry.barriers->Close(down);
      entry.events->Close();
    }
  }
  stop_detector_.Notify();
  if (detector_.joinable()) detector_.join();
  if (persister_ != nullptr) persister_->Stop(absl::Seconds(5));
}

absl::StatusOr<Coordinator::JobEntry*> Coordinator::FindJob(
    const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("job '", job_id, "' not found"));
  }
  return &it->second;
}

absl::StatusOr<Coordinator::WorkerEntry*> Coordinator::FindWorker(
    const std::string& worker_id) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end() ||
      it->second.info.state() == v1::WORKER_STATE_DEAD) {
    return absl::NotFoundError(absl::StrCat(
        "worker '", worker_id, "' is not registered (register again)"));
  }
  return &it->second;
}

absl::StatusOr<Coordinator::JobEntry*> Coordinator::FindAttempt(
    const std::string& job_id, int attempt) {
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  const v1::Job& job = (*entry)->job;
  if (attempt != job.attempt()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " attempt ", attempt,
                     " is not current (current attempt: ", job.attempt(), ")"));
  }
  if (IsTerminal(job.state()) || job.state() == v1::JOB_STATE_PENDING) {
    return absl::AbortedError(
        absl::StrCat("job ", job_id, " attempt ", attempt, " is over (job ",
                     JobStateName(job.state()), ": ", job.message(), ")"));
  }
  return *entry;
}

std::string Coordinator::DescribeRank(const JobEntry& entry, int rank) const {
  for (const v1::RankAssignment& r : entry.job.ranks()) {
    if (r.rank() == rank) return RankLabel(rank, r.worker_id(), r.host());
  }
  return absl::StrCat("rank ", rank);
}

v1::Job Coordinator::Snapshot(const JobEntry& entry) const {
  v1::Job job = entry.job;
  job.set_persist_error(entry.persist_error);
  // Live metrics, unless none arrived since a restart (then the persisted
  // summary is the best there is).
  if (!IsTerminal(job.state()) &&
      (entry.metrics.has_steps() || job.metrics().ranks_size() == 0)) {
    *job.mutable_metrics() = entry.metrics.Summary();
  }
  return job;
}

void Coordinator::PublishJob(JobEntry& entry) {
  v1::JobEvent event;
  *event.mutable_job() = Abridged(Snapshot(entry));
  *event.mutable_summary() = event.job().metrics();
  entry.events->Append(std::move(event));
}

void Coordinator::Persist(JobEntry& entry) {
  if (persister_ == nullptr) return;
  persister_->Save(entry.job);
  // The curve and log are larger than the record: written at most every
  // kTrailEvery while the job runs, and whenever it is terminal (so that
  // its final curve and log survive a restart).
  constexpr absl::Duration kTrailEvery = absl::Seconds(30);
  constexpr size_t kTrailLogLines = 1000;
  const absl::Time now = absl::Now();
  if (!IsTerminal(entry.job.state()) &&
      now - entry.trail_persisted < kTrailEvery) {
    return;
  }
  entry.trail_persisted = now;
  v1::JobTrail trail;
  const v1::JobCurves curves = entry.metrics.Curves();
  *trail.mutable_train() = curves.train();
  trail.set_stride(curves.stride());
  entry.logs.SaveTo(kTrailLogLines, &trail);
  persister_->SaveTrail(entry.job.id(), std::move(trail));
}

void Coordinator::OnPersisted(const std::string& job_id,
                              const absl::Status& status) {
  if (job_id.empty()) return;  // a worker key: logged by the persister
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  JobEntry& entry = it->second;
  const std::string error =
      status.ok()
          ? ""
          : absl::StrCat("cannot write the job's record: ", status.message(),
                         " (retrying)");
  if (error == entry.persist_error) return;
  entry.persist_error = error;
  PublishJob(entry);
}

void Coordinator::NoteSnapshotStorage(const std::string& job_id,
                                      const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  JobEntry& entry = it->second;
  v1::Job& job = entry.job;
  const std::string error(status.message());
  if (!status.ok()) job.set_snapshot_failures(job.snapshot_failures() + 1);
  if (error == job.snapshot_error()) return;
  job.set_snapshot_error(error);
  LogLine("coordinator",
          status.ok() ? absl::StrCat("job ", job_id, ": snapshots stored again")
                      : absl::StrCat("job ", job_id, ": ", error,
                                     " (its newest stored snapshot is kept)"));
  PublishJob(entry);
  Persist(entry);
}

void Coordinator::SetTrainedModel(const std::string& job_id,
                                  const std::string& sha256) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  it->second.job.set_trained_model_sha256(sha256);
  PublishJob(it->second);
  Persist(it->second);
}

void Coordinator::Transition(JobEntry& entry, v1::JobState to,
                             const std::string& reason) {
  v1::Job& job = entry.job;
  if (!IsAllowedTransition(job.state(), to)) return;
  const int64_t now = UnixMs(absl::Now());
  v1::Transition* t = job.add_transitions();
  t->set_from(job.state());
  t->set_to(to);
  t->set_reason(reason);
  t->set_time_unix_ms(now);
  job.clear_stall();
  entry.stall_key.clear();
  // An attempt that ends without succeeding leaves nothing uncommitted in
  // the ledger (sample_ledger.h): a later attempt trains it again.
  if ((job.state() == v1::JOB_STATE_RUNNING ||
       job.state() == v1::JOB_STATE_RENDEZVOUS) &&
      to != v1::JOB_STATE_RUNNING && to != v1::JOB_STATE_SUCCEEDED) {
    ForgetUncommitted(job, job.attempt());
  }
  job.set_state(to);
  job.set_message(reason);
  job.set_updated_unix_ms(now);
  LogLine("coordinator",
          absl::StrFormat("job %s %s -> %s: %s", job.id(),
                          JobStateName(t->from()), JobStateName(to), reason));
  if (IsTerminal(to)) {
    *job.mutable_metrics() = entry.metrics.Summary();
    const absl::Status ended = absl::AbortedError(
        absl::StrCat("job ", job.id(), " is ", JobStateName(to), ": ", reason));
    if (entry.store) entry.store->Close(ended);
    if (entry.barriers) entry.barriers->Close(ended);
    if (job.master_port() > 0)
      ports_.Release(job.master_addr(), job.master_port());
  }
  PublishJob(entry);
  if (IsTerminal(to)) entry.events->Close();
  Index(entry);
  Persist(entry);
}

void Coordinator::Index(JobEntry& entry) {
  by_seq_[entry.queue_seq] = &entry;
  if (!IsTerminal(entry.job.state())) {
    active_[entry.queue_seq] = &entry;
    return;
  }
  active_.erase(entry.queue_seq);
  if (entry.finished_unix_ms == 0) {
    entry.finished_unix_ms = std::max<int64_t>(entry.job.updated_unix_ms(), 1);
    finished_.insert({entry.finished_unix_ms, entry.queue_seq});
  }
}

void Coordinator::Forget(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  JobEntry& entry = it->second;
  // Workers still tearing the job down: their next heartbeat is told the
  // task is not theirs (STOP), and the one after finds them idle.
  for (auto& [id, w] : workers_) {
    if (w.job_id != job_id) continue;
    w.job_id.clear();
    w.attempt = 0;
    w.rank = -1;
    w.info.clear_job_id();
    w.info.set_rank(-1);
  }
  entry.events->Close();
  finished_.erase({entry.finished_unix_ms, entry.queue_seq});
  active_.erase(entry.queue_seq);
  by_seq_.erase(entry.queue_seq);
  if (persister_ != nullptr) persister_->Delete(job_id);
  if (options_.on_job_deleted) options_.on_job_deleted(job_id);
  jobs_.erase(it);
}

void Coordinator::EnforceRetention(absl::Time now) {
  const int64_t oldest_kept = UnixMs(now - options_.finished_job_ttl);
  while (!finished_.empty()) {
    const auto [finished_ms, seq] = *finished_.begin();
    const bool too_many =
        static_cast<int64_t>(finished_.size()) > options_.max_finished_jobs;
    if (!too_many && finished_ms >= oldest_kept) break;
    const std::string id = by_seq_.at(seq)->job.id();
    LogLine("coordinator",
            absl::StrFormat("deleting finished job %s (%s)", id,
                            too_many ? absl::StrCat("more than ",
                                                    options_.max_finished_jobs,
                                                    " finished jobs kept")
                                     : "older than --keep-finished-for"));
    Forget(id);
  }
}

// ---------------------------------------------------------------- scheduler

}  // namespace gradsync
