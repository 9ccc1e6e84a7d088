#include "coordinator/coordinator.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/auth.h"
#include "coordinator/data_roots.h"
#include "coordinator/job_spec.h"
#include "coordinator/job_state.h"
#include "coordinator/sample_ledger.h"
#include "loader/image_folder_index.h"
#include "loader/sampler.h"

namespace gradsync {
namespace {

int64_t UnixMs(absl::Time t) { return absl::ToUnixMillis(t); }

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

// Size of an image-folder split; errors name the JobSpec field.
absl::StatusOr<int64_t> CountSamples(const std::string& field,
                                     const std::string& path,
                                     const std::string& split) {
  absl::StatusOr<ImageFolderIndex> index =
      ScanImageFolder(SplitPath(path, split));
  if (!index.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job_spec.", field, ": ", index.status().message()));
  }
  return static_cast<int64_t>(index->samples.size());
}

// 128 random bits as 32 hex digits.
std::string NewWorkerKey() {
  std::random_device random;
  std::string key;
  for (int i = 0; i < 4; ++i)
    absl::StrAppend(&key, absl::Hex(random(), absl::kZeroPad8));
  return key;
}

// "rank R (worker W on host H)": how reasons and logs name a rank.
std::string RankLabel(int rank, const std::string& worker_id,
                      const std::string& host) {
  return absl::StrCat("rank ", rank, " (worker ", worker_id, " on host ", host,
                      ")");
}

// Whether attempt `attempt` of `job` is over: superseded, ended with the
// job, or failed and waiting for its restart (PENDING).
bool AttemptOver(const v1::Job& job, int attempt) {
  return attempt != job.attempt() || IsTerminal(job.state()) ||
         job.state() == v1::JOB_STATE_PENDING;
}

}  // namespace

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
}

absl::Status Coordinator::Restore() {
  if (job_store_ == nullptr) return absl::OkStatus();
  absl::StatusOr<std::vector<v1::Job>> jobs = job_store_->LoadAll();
  if (!jobs.ok()) return jobs.status();
  absl::StatusOr<std::map<std::string, std::string>> keys =
      job_store_->LoadWorkerKeys();
  if (!keys.ok()) return keys.status();
  absl::MutexLock lock(&mu_);
  restored_keys_ = std::move(*keys);
  const absl::Time now = absl::Now();
  for (v1::Job& job : *jobs) {
    int64_t n = 0;
    if (absl::SimpleAtoi(absl::string_view(job.id()).substr(4), &n)) {
      next_job_ = std::max(next_job_, n + 1);
    }
    JobEntry& entry = jobs_[job.id()];
    entry.queue_seq = n;
    entry.job = std::move(job);
    for (const v1::EvalMetrics& e : entry.job.metrics().eval()) {
      entry.metrics.AddEval(e);
    }
    v1::Job& j = entry.job;
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
      entry.store = std::make_shared<KvStore>();
      entry.barriers = std::make_shared<BarrierTable>(j.world_size());
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
      absl::FPrintF(stderr,
                    "coordinator: restored running job %s (attempt %d); "
                    "waiting %s for %d worker(s) to re-register\n",
                    j.id(), j.attempt(),
                    FormatSeconds(options_.reconnect_grace),
                    entry.awaiting_reconnect.size());
    }
  }
  return absl::OkStatus();
}

Coordinator::WorkerEntry* Coordinator::Readopt(
    const v1::RegisterWorkerRequest& request, absl::Time now) {
  const v1::ResumeTask& r = request.resume();
  auto key = restored_keys_.find(r.worker_id());
  if (key == restored_keys_.end() || !KeysEqual(key->second, r.worker_key()) ||
      workers_.count(r.worker_id()) > 0) {
    return nullptr;
  }
  auto job = jobs_.find(r.job_id());
  if (job == jobs_.end()) return nullptr;
  JobEntry& entry = job->second;
  const v1::Job& j = entry.job;
  if (j.state() != v1::JOB_STATE_RUNNING || j.attempt() != r.attempt() ||
      r.rank() < 0 || r.rank() >= j.ranks_size() ||
      j.ranks(r.rank()).worker_id() != r.worker_id() ||
      entry.awaiting_reconnect.erase(r.worker_id()) == 0) {
    return nullptr;
  }
  WorkerEntry& w = workers_[r.worker_id()];
  w.seq = next_worker_++;
  w.key = key->second;
  w.last_heartbeat = now;
  w.free_ports.assign(request.free_ports().begin(), request.free_ports().end());
  w.job_id = j.id();
  w.attempt = j.attempt();
  w.rank = r.rank();
  w.info.set_worker_id(r.worker_id());
  w.info.set_host(request.host());
  *w.info.mutable_devices() = request.devices();
  w.info.set_state(v1::WORKER_STATE_RUNNING);
  w.info.set_job_id(j.id());
  w.info.set_rank(r.rank());
  w.info.set_registered_unix_ms(UnixMs(now));
  absl::FPrintF(stderr,
                "coordinator: worker %s re-registered from %s with its task: "
                "job %s attempt %d rank %d\n",
                r.worker_id(), request.host(), j.id(), j.attempt(), r.rank());
  return &w;
}

void Coordinator::DetectorLoop() {
  const absl::Duration period =
      std::max(options_.heartbeat_timeout / 8, absl::Milliseconds(5));
  while (!stop_detector_.WaitForNotificationWithTimeout(period)) {
    SweepDeadWorkers(absl::Now());
  }
}

// ---------------------------------------------------------------- helpers

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
  // Live metrics, unless none arrived since a restart (then the persisted
  // summary is the best there is).
  if (!IsTerminal(job.state()) &&
      (entry.metrics.has_steps() || job.metrics().ranks_size() == 0)) {
    *job.mutable_metrics() = entry.metrics.Summary();
  }
  return job;
}

void Coordinator::Persist(const JobEntry& entry) {
  if (job_store_ == nullptr) return;
  absl::Status s = job_store_->Save(entry.job);
  if (!s.ok()) {
    absl::FPrintF(stderr, "coordinator: cannot persist job %s: %s\n",
                  entry.job.id(), s.ToString());
  }
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
  job.set_state(to);
  job.set_message(reason);
  job.set_updated_unix_ms(now);
  absl::FPrintF(stderr, "coordinator: job %s %s -> %s: %s\n", job.id(),
                JobStateName(t->from()), JobStateName(to), reason);
  if (IsTerminal(to)) {
    *job.mutable_metrics() = entry.metrics.Summary();
    const absl::Status ended = absl::AbortedError(
        absl::StrCat("job ", job.id(), " is ", JobStateName(to), ": ", reason));
    if (entry.store) entry.store->Close(ended);
    if (entry.barriers) entry.barriers->Close(ended);
    if (job.master_port() > 0)
      ports_.Release(job.master_addr(), job.master_port());
  }
  v1::JobEvent event;
  *event.mutable_job() = Snapshot(entry);
  *event.mutable_summary() = event.job().metrics();
  entry.events->Append(std::move(event));
  if (IsTerminal(to)) entry.events->Close();
  Persist(entry);
}

// ---------------------------------------------------------------- scheduler

namespace {
bool HasGpu(const v1::WorkerInfo& w) {
  for (const v1::Device& d : w.devices()) {
    if (d.kind() == "cuda") return true;
  }
  return false;
}
}  // namespace

void Coordinator::FailAttempt(JobEntry& entry, const std::string& reason,
                              const std::string& dead_worker) {
  v1::Job& job = entry.job;
  const absl::Time now = absl::Now();
  if (v1::AttemptRecord* a = FindAttemptRecord(job, job.attempt())) {
    a->set_ended_unix_ms(UnixMs(now));
    a->set_outcome(reason);
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
  const int min_workers = job.spec().world_size().min_workers();
  if (job.restarts() >= max_restarts) {
    Transition(
        entry, v1::JOB_STATE_FAILED,
        absl::StrCat(reason, max_restarts == 0
                                 ? "; restarts are off (max_restarts 0)"
                                 : absl::StrCat("; restart limit (",
                                                max_restarts, ") reached")));
    return;
  }
  if (available < min_workers) {
    Transition(entry, v1::JOB_STATE_FAILED,
               absl::StrCat(reason, "; cannot restart: ", available,
                            " worker(s) available, the job needs at least ",
                            min_workers));
    return;
  }
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
      absl::StrCat("attempt ", job.attempt(), " failed: ", reason, "; restart ",
                   job.restarts(), " of ", max_restarts,
                   job.resume_checkpoint().empty()
                       ? ", from the start (no checkpoint committed)"
                       : absl::StrCat(", from ", job.resume_checkpoint(),
                                      " (step ", job.resume_step(), ")")));
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

void Coordinator::Schedule() {
  if (shut_down_) return;
  const absl::Time now = absl::Now();
  std::vector<JobEntry*> pending;
  for (auto& [id, entry] : jobs_) {
    if (entry.job.state() != v1::JOB_STATE_PENDING) continue;
    // A restart first waits for the failed attempt's live workers.
    if (!entry.awaiting_release.empty() && now < entry.restart_deadline) {
      continue;
    }
    pending.push_back(&entry);
  }
  std::sort(pending.begin(), pending.end(),
            [](const JobEntry* a, const JobEntry* b) {
              return a->queue_seq < b->queue_seq;
            });
  std::vector<WorkerEntry*> idle;
  for (auto& [id, w] : workers_) {
    if (w.info.state() == v1::WORKER_STATE_IDLE && w.job_id.empty()) {
      idle.push_back(&w);
    }
  }
  std::sort(idle.begin(), idle.end(),
            [](const WorkerEntry* a, const WorkerEntry* b) {
              return a->seq < b->seq;
            });
  for (JobEntry* entry : pending) {
    const bool started = !idle.empty() && TryStart(*entry, idle);
    const v1::AttemptRecord* last =
        FindAttemptRecord(entry->job, entry->job.attempt());
    if (!started && entry->job.restarts() > 0 && last != nullptr &&
        last->ended_unix_ms() > 0) {
      // The failed attempt's workers are back or gone and too few remain:
      // a restart does not wait for workers that may never come.
      const int min_workers = entry->job.spec().world_size().min_workers();
      Transition(
          *entry, v1::JOB_STATE_FAILED,
          absl::StrCat(entry->restart_reason, "; cannot restart: ", idle.size(),
                       " idle worker(s) after the failed attempt's "
                       "workers were released, the job needs at least ",
                       min_workers));
    }
  }
}

bool Coordinator::TryStart(JobEntry& entry, std::vector<WorkerEntry*>& idle) {
  v1::Job& job = entry.job;
  const v1::WorldSize& ws = job.spec().world_size();
  // backend nccl runs only on workers with a GPU; auto takes NCCL when every
  // chosen worker has one.
  const bool needs_gpu = job.spec().backend() == v1::BACKEND_NCCL;
  std::vector<WorkerEntry*> eligible;
  for (WorkerEntry* w : idle) {
    if (!needs_gpu || HasGpu(w->info)) eligible.push_back(w);
  }
  if (static_cast<int>(eligible.size()) < ws.min_workers()) {
    if (needs_gpu && eligible.size() < idle.size()) {
      job.set_message(
          absl::StrCat("backend nccl: waiting for ", ws.min_workers(),
                       " idle worker(s) with a GPU; ", eligible.size(), " of ",
                       idle.size(), " idle have one"));
    }
    return false;
  }
  const int world = std::min<int>(ws.max_workers(), eligible.size());
  std::vector<WorkerEntry*> chosen(eligible.begin(), eligible.begin() + world);
  // Ranks grouped by host, as torchrun numbers them node by node.
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const WorkerEntry* a, const WorkerEntry* b) {
                     return a->info.host() < b->info.host();
                   });
  const std::string& master = chosen[0]->info.host();
  absl::StatusOr<int> port = ports_.Acquire(master, chosen[0]->free_ports);
  if (!port.ok()) {
    job.set_message(std::string(port.status().message()));
    return false;
  }
  idle.erase(std::remove_if(idle.begin(), idle.end(),
                            [&chosen](WorkerEntry* w) {
                              return std::find(chosen.begin(), chosen.end(),
                                               w) != chosen.end();
                            }),
             idle.end());
  const bool all_gpu =
      std::all_of(chosen.begin(), chosen.end(),
                  [](WorkerEntry* w) { return HasGpu(w->info); });

  job.set_attempt(job.attempt() + 1);
  job.set_world_size(world);
  v1::AttemptRecord* record = job.add_attempts();
  record->set_attempt(job.attempt());
  record->set_world_size(world);
  record->set_started_unix_ms(UnixMs(absl::Now()));
  entry.awaiting_release.clear();
  job.set_master_addr(master);
  job.set_master_port(*port);
  job.set_backend(job.spec().backend() != v1::BACKEND_AUTO
                      ? job.spec().backend()
                  : all_gpu ? v1::BACKEND_NCCL
                            : v1::BACKEND_GLOO);
  job.clear_ranks();
  entry.joined.clear();
  entry.completed.clear();
  entry.metrics.ResetSteps();
  entry.store = std::make_shared<KvStore>();
  entry.barriers = std::make_shared<BarrierTable>(world);
  std::map<std::string, int> per_host;
  std::vector<std::string> described;
  for (int rank = 0; rank < world; ++rank) {
    WorkerEntry& w = *chosen[rank];
    v1::RankAssignment* r = job.add_ranks();
    r->set_rank(rank);
    r->set_local_rank(per_host[w.info.host()]++);
    r->set_worker_id(w.info.worker_id());
    r->set_host(w.info.host());
    w.job_id = job.id();
    w.attempt = job.attempt();
    w.rank = rank;
    if (job_store_ != nullptr) {
      if (absl::Status s = job_store_->SaveWorkerKey(w.info.worker_id(), w.key);
          !s.ok()) {
        absl::FPrintF(stderr, "coordinator: cannot persist a worker key: %s\n",
                      s.ToString());
      }
    }
    w.info.set_state(v1::WORKER_STATE_STARTING);
    w.info.set_job_id(job.id());
    w.info.set_rank(rank);
    described.push_back(
        absl::StrCat(rank, "=", w.info.worker_id(), "@", w.info.host()));
  }
  Transition(entry, v1::JOB_STATE_RENDEZVOUS,
             absl::StrCat("attempt ", job.attempt(), ": ", world,
                          " worker(s) assigned (ranks ",
                          absl::StrJoin(described, ", "), "), master ", master,
                          ":", *port, ", backend ",
                          job.backend() == v1::BACKEND_NCCL ? "nccl" : "gloo"));
  return true;
}

v1::Assignment Coordinator::MakeAssignment(const JobEntry& entry,
                                           int rank) const {
  const v1::Job& job = entry.job;
  v1::Assignment a;
  a.set_job_id(job.id());
  a.set_attempt(job.attempt());
  a.set_rank(rank);
  a.set_world_size(job.world_size());
  a.set_local_rank(job.ranks(rank).local_rank());
  a.set_master_addr(job.master_addr());
  a.set_master_port(job.master_port());
  a.set_backend(job.backend());
  *a.mutable_peers() = job.ranks();
  *a.mutable_spec() = job.spec();
  if (!job.resume_checkpoint().empty()) {
    // A restart resumes from the last committed checkpoint; the shards
    // leave out what it committed (sample_ledger.h).
    a.mutable_spec()->mutable_checkpoint()->set_resume_from(
        job.resume_checkpoint());
    a.set_resume_remaining(true);
    if (job.resume_from_snapshot()) {
      a.set_has_resume_snapshot(true);
      a.set_resume_snapshot_step(job.resume_step());
    }
  } else if (const v1::CheckpointSpec& c = job.spec().checkpoint();
             !c.resume_snapshot_job().empty()) {
    // Until it commits its own, the job starts from another job's snapshot
    // (pinned at submit); the trainer treats it as a resume_from.
    a.set_has_resume_snapshot(true);
    a.set_resume_snapshot_job(c.resume_snapshot_job());
    a.set_resume_snapshot_step(c.resume_snapshot_step());
    a.mutable_spec()->mutable_checkpoint()->set_resume_from(
        absl::StrCat("snapshot of ", c.resume_snapshot_job(), " step ",
                     c.resume_snapshot_step()));
  }
  a.set_train_samples(job.train_samples());
  a.set_eval_samples(job.eval_samples());
  return a;
}

// ---------------------------------------------------------------- jobs

absl::StatusOr<v1::Job> Coordinator::SubmitJob(v1::JobSpec spec) {
  ApplyJobSpecDefaults(&spec);
  if (absl::Status s = ValidateJobSpec(spec, options_.max_world_size);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckUnderDataRoots(
          "dataset.path", spec.dataset().path(), options_.data_roots);
      !s.ok()) {
    return s;
  }
  // Scan the data set outside the lock: it touches the file system.
  absl::StatusOr<int64_t> train = CountSamples(
      "dataset.path", spec.dataset().path(), spec.dataset().split());
  if (!train.ok()) return train.status();
  int64_t eval = 0;
  if (!spec.dataset().eval_split().empty()) {
    absl::StatusOr<int64_t> n =
        CountSamples("dataset.eval_split", spec.dataset().path(),
                     spec.dataset().eval_split());
    if (!n.ok()) return n.status();
    eval = *n;
  }

  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("coordinator is shutting down");
  const int active = static_cast<int>(std::count_if(
      jobs_.begin(), jobs_.end(),
      [](const auto& j) { return !IsTerminal(j.second.job.state()); }));
  if (active >= options_.max_active_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        active, " jobs are pending or running; this coordinator takes at most ",
        options_.max_active_jobs, " (--max-active-jobs): wait or cancel one"));
  }
  const int64_t seq = next_job_++;
  const std::string id = absl::StrFormat("job-%06d", seq);
  JobEntry& entry = jobs_[id];
  entry.queue_seq = seq;
  entry.job.set_id(id);
  *entry.job.mutable_spec() = std::move(spec);
  entry.job.set_created_unix_ms(UnixMs(absl::Now()));
  entry.job.set_train_samples(*train);
  entry.job.set_eval_samples(eval);
  Transition(entry, v1::JOB_STATE_PENDING,
             absl::StrCat("submitted; waiting for ",
                          entry.job.spec().world_size().min_workers(),
                          " idle worker(s)"));
  Schedule();
  return Snapshot(entry);
}

absl::StatusOr<v1::Job> Coordinator::GetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  return Snapshot(**entry);
}

std::vector<v1::Job> Coordinator::ListJobs(int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<const JobEntry*> entries;
  for (const auto& [id, entry] : jobs_) entries.push_back(&entry);
  std::sort(entries.begin(), entries.end(),
            [](const JobEntry* a, const JobEntry* b) {
              return a->queue_seq > b->queue_seq;
            });
  if (limit > 0 && static_cast<int>(entries.size()) > limit) {
    entries.resize(limit);
  }
  std::vector<v1::Job> jobs;
  for (const JobEntry* e : entries) jobs.push_back(Snapshot(*e));
  return jobs;
}

absl::StatusOr<v1::Job> Coordinator::CancelJob(const std::string& job_id,
                                               const std::string& reason) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  JobEntry& e = **entry;
  if (IsTerminal(e.job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is already ",
                     JobStateName(e.job.state()), "; nothing to cancel"));
  }
  Transition(e, v1::JOB_STATE_CANCELLED,
             reason.empty() ? "cancelled by user"
                            : absl::StrCat("cancelled by user: ", reason));
  return Snapshot(e);
}

absl::StatusOr<std::shared_ptr<EventLog>> Coordinator::JobEvents(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  return (*entry)->events;
}

std::vector<v1::WorkerInfo> Coordinator::ListWorkers() {
  absl::MutexLock lock(&mu_);
  std::vector<const WorkerEntry*> entries;
  for (const auto& [id, w] : workers_) entries.push_back(&w);
  std::sort(entries.begin(), entries.end(),
            [](const WorkerEntry* a, const WorkerEntry* b) {
              return a->seq < b->seq;
            });
  std::vector<v1::WorkerInfo> out;
  for (const WorkerEntry* w : entries) {
    v1::WorkerInfo info = w->info;
    info.set_last_heartbeat_unix_ms(UnixMs(w->last_heartbeat));
    out.push_back(std::move(info));
  }
  return out;
}

// ---------------------------------------------------------------- workers

absl::StatusOr<v1::RegisterWorkerResponse> Coordinator::RegisterWorker(
    const v1::RegisterWorkerRequest& request) {
  if (request.host().empty()) {
    return absl::InvalidArgumentError(
        "register: host is required (the address peers reach this worker at)");
  }
  for (int port : request.free_ports()) {
    if (port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "register: free_ports holds ", port, ", outside [1, 65535]"));
    }
  }
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("coordinator is shutting down");
  const int live = static_cast<int>(
      std::count_if(workers_.begin(), workers_.end(), [](const auto& w) {
        return w.second.info.state() != v1::WORKER_STATE_DEAD;
      }));
  if (live >= options_.max_workers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("register: ", live,
                     " workers are registered; this coordinator takes at most ",
                     options_.max_workers, " (--max-workers)"));
  }
  const absl::Time now = absl::Now();
  v1::RegisterWorkerResponse response;
  response.set_heartbeat_interval_ms(
      absl::ToInt64Milliseconds(options_.heartbeat_interval));
  response.set_heartbeat_timeout_ms(
      absl::ToInt64Milliseconds(options_.heartbeat_timeout));
  if (request.has_resume()) {
    if (WorkerEntry* w = Readopt(request, now)) {
      response.set_worker_id(w->info.worker_id());
      response.set_worker_key(w->key);
      response.set_resumed(true);
      return response;
    }
  }
  const int64_t seq = next_worker_++;
  const std::string id = absl::StrFormat("w%d-%04x", seq, incarnation_);
  WorkerEntry& w = workers_[id];
  w.seq = seq;
  w.key = NewWorkerKey();
  w.last_heartbeat = now;
  w.free_ports.assign(request.free_ports().begin(), request.free_ports().end());
  w.info.set_worker_id(id);
  w.info.set_host(request.host());
  *w.info.mutable_devices() = request.devices();
  w.info.set_state(v1::WORKER_STATE_IDLE);
  w.info.set_rank(-1);
  w.info.set_registered_unix_ms(UnixMs(now));
  absl::FPrintF(stderr, "coordinator: worker %s registered from %s\n", id,
                request.host());
  Schedule();
  response.set_worker_id(id);
  response.set_worker_key(w.key);
  return response;
}

absl::Status Coordinator::AuthorizeWorker(const std::string& worker_id,
                                          const std::string& key,
                                          const std::string& job_id,
                                          int attempt, int rank) {
  if (worker_id.empty()) {
    return absl::InvalidArgumentError(
        "worker_id is required (the id RegisterWorker returned)");
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<WorkerEntry*> w = FindWorker(worker_id);
  if (!w.ok()) return w.status();
  if (!KeysEqual(key, (*w)->key)) {
    return absl::PermissionDeniedError(absl::StrCat(
        key.empty() ? "missing" : "wrong", " worker key: only worker ",
        worker_id, " may act as ", worker_id,
        " (send RegisterWorkerResponse.worker_key as metadata ",
        kWorkerKeyHeader, ")"));
  }
  if (job_id.empty()) return absl::OkStatus();
  absl::StatusOr<JobEntry*> entry = FindAttempt(job_id, attempt);
  if (!entry.ok()) return entry.status();
  const v1::Job& job = (*entry)->job;
  const v1::RankAssignment* mine = nullptr;
  for (const v1::RankAssignment& r : job.ranks()) {
    if (r.worker_id() == worker_id) mine = &r;
  }
  if (mine == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("worker ", worker_id, " is not assigned to job ", job_id,
                     " attempt ", attempt));
  }
  if (rank >= 0 && mine->rank() != rank) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker ", worker_id, " is rank ", mine->rank(), " of job ", job_id,
        " attempt ", attempt, ", not rank ", rank));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::HeartbeatResponse> Coordinator::Heartbeat(
    const v1::HeartbeatRequest& request) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<WorkerEntry*> found = FindWorker(request.worker_id());
  if (!found.ok()) return found.status();
  WorkerEntry& w = **found;
  w.last_heartbeat = absl::Now();
  w.info.set_epoch(request.epoch());
  w.info.set_step(request.step());
  if (request.collective_seq() != w.info.collective_seq() ||
      w.seq_since == absl::InfinitePast()) {
    w.seq_since = w.last_heartbeat;
  }
  w.info.set_collective_seq(request.collective_seq());

  v1::HeartbeatResponse response;
  const bool reports_task = !request.job_id().empty();
  if (!w.job_id.empty()) {
    const JobEntry& current = jobs_.at(w.job_id);
    const v1::Job& job = current.job;
    // A rank that completed its part waits for no one: the worker is free
    // once it reports no task (not re-assigned while the others finish).
    const bool completed = !reports_task && !AttemptOver(job, w.attempt) &&
                           current.completed.count(w.rank) > 0;
    if (AttemptOver(job, w.attempt) || completed) {
      if (reports_task) {
        response.set_action(v1::ACTION_STOP);
        response.set_reason(absl::StrCat("job ", job.id(), " is ",
                                         JobStateName(job.state()), ": ",
                                         job.message()));
        w.info.set_state(v1::WORKER_STATE_STOPPING);
        return response;
      }
      // The worker has torn its task down: free it for the next job.
      Released(w.job_id, w.info.worker_id());
      w.job_id.clear();
      w.attempt = 0;
      w.rank = -1;
      w.info.clear_job_id();
      w.info.set_rank(-1);
    }
  }
  if (w.job_id.empty()) {
    if (reports_task) {
      response.set_action(v1::ACTION_STOP);
      response.set_reason(absl::StrCat("job ", request.job_id(), " attempt ",
                                       request.attempt(),
                                       " is not assigned to this worker"));
      w.info.set_state(v1::WORKER_STATE_STOPPING);
      return response;
    }
    w.info.set_state(v1::WORKER_STATE_IDLE);
    Schedule();
    if (w.job_id.empty()) return response;  // still idle
  }

  JobEntry& entry = jobs_.at(w.job_id);
  const v1::Job& job = entry.job;
  if (request.job_id() != w.job_id || request.attempt() != w.attempt) {
    response.set_action(v1::ACTION_RUN);
    *response.mutable_assignment() = MakeAssignment(entry, w.rank);
    return response;
  }
  // The worker runs its task.
  w.info.set_state(v1::WORKER_STATE_RUNNING);
  if (request.state() == v1::WORKER_STATE_RUNNING &&
      entry.joined.insert(w.rank).second &&
      static_cast<int>(entry.joined.size()) == job.world_size() &&
      job.state() == v1::JOB_STATE_RENDEZVOUS) {
    Transition(entry, v1::JOB_STATE_RUNNING,
               absl::StrCat("all ", job.world_size(), " rank(s) joined"));
  }
  return response;
}

absl::StatusOr<v1::GetShardResponse> Coordinator::GetShard(
    const v1::GetShardRequest& request) {
  const bool eval = request.split() == v1::SHARD_SPLIT_EVAL;
  int world = 0;
  int64_t n = 0;
  v1::JobSpec spec;
  v1::LedgerSegment segment;
  {
    absl::MutexLock lock(&mu_);
    if (absl::StatusOr<WorkerEntry*> w = FindWorker(request.worker_id());
        !w.ok()) {
      return w.status();
    }
    absl::StatusOr<JobEntry*> entry =
        FindAttempt(request.job_id(), request.attempt());
    if (!entry.ok()) return entry.status();
    v1::Job& job = (*entry)->job;
    if (request.epoch() < 0 || request.epoch() >= job.spec().epochs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: epoch must be in [0, ", job.spec().epochs(),
                       ") (got ", request.epoch(), ")"));
    }
    if (request.rank() < 0 || request.rank() >= job.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: rank ", request.rank(), " is outside [0, ",
                       job.world_size(), ")"));
    }
    world = job.world_size();
    spec = job.spec();
    n = eval ? job.eval_samples() : job.train_samples();
    if (!eval) {
      // The part of the epoch's order not committed by earlier attempts.
      bool created = false;
      segment = CurrentSegment(job, request.epoch(), &created);
      if (created) Persist(**entry);
    }
  }
  // Compute the indices outside the lock: a permutation of the data set.
  v1::GetShardResponse response;
  response.set_dataset_size(n);
  if (eval) {
    absl::StatusOr<std::vector<int64_t>> indices =
        EvalShardIndices(n, world, request.rank());
    if (!indices.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: ", indices.status().message()));
    }
    response.mutable_indices()->Assign(indices->begin(), indices->end());
    response.set_total_size(n);
    return response;
  }
  const std::vector<int64_t> indices =
      SegmentShard(segment, spec, n, request.epoch(), request.rank());
  response.mutable_indices()->Assign(indices.begin(), indices.end());
  response.set_total_size(
      DistributedNumSamples(segment.length(), world, spec.drop_last()) * world);
  return response;
}

absl::Status Coordinator::ReportMetrics(
    const v1::ReportMetricsRequest& request) {
  absl::MutexLock lock(&mu_);
  if (absl::StatusOr<WorkerEntry*> w = FindWorker(request.worker_id());
      !w.ok()) {
    return w.status();
  }
  absl::StatusOr<JobEntry*> found =
      FindAttempt(request.job_id(), request.attempt());
  if (!found.ok()) return found.status();
  JobEntry& entry = **found;
  for (const v1::StepMetrics& step : request.steps()) {
    if (step.rank() < 0 || step.rank() >= entry.job.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("report metrics: rank ", step.rank(), " is outside [0, ",
                       entry.job.world_size(), ")"));
    }
  }
  for (const v1::StepMetrics& step : request.steps()) {
    entry.metrics.AddStep(step);
  }
  for (const v1::EvalMetrics& eval : request.eval()) {
    entry.metrics.AddEval(eval);
  }
  // One summary per report, attached to its last event.
  const v1::JobMetrics summary = entry.metrics.Summary();
  const int total = request.steps_size() + request.eval_size();
  int emitted = 0;
  auto publish = [&](v1::JobEvent event) {
    if (++emitted == total) *event.mutable_summary() = summary;
    entry.events->Append(std::move(event));
  };
  for (const v1::StepMetrics& step : request.steps()) {
    v1::JobEvent event;
    *event.mutable_step() = step;
    publish(std::move(event));
  }
  for (const v1::EvalMetrics& eval : request.eval()) {
    v1::JobEvent event;
    *event.mutable_eval() = eval;
    publish(std::move(event));
  }
  for (const v1::CheckpointCommit& commit : request.checkpoints()) {
    CommitCheckpoint(entry.job, commit);
  }
  // Evaluations and commits at once, step summaries every 2 s, so that a
  // restarted coordinator shows recent progress.
  const absl::Time now = absl::Now();
  if (request.eval_size() > 0 || request.checkpoints_size() > 0 ||
      now - entry.metrics_persisted > absl::Seconds(2)) {
    *entry.job.mutable_metrics() = summary;
    entry.metrics_persisted = now;
    Persist(entry);
  }
  return absl::OkStatus();
}

absl::Status Coordinator::CompleteTask(const v1::CompleteTaskRequest& request) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<WorkerEntry*> found = FindWorker(request.worker_id());
  if (!found.ok()) return found.status();
  WorkerEntry& w = **found;
  if (w.job_id != request.job_id() || w.attempt != request.attempt() ||
      w.rank != request.rank()) {
    return absl::FailedPreconditionError(
        absl::StrCat("complete task: worker ", w.info.worker_id(),
                     " is not rank ", request.rank(), " of job ",
                     request.job_id(), " attempt ", request.attempt()));
  }
  absl::StatusOr<JobEntry*> attempt =
      FindAttempt(request.job_id(), request.attempt());
  if (!attempt.ok()) return attempt.status();
  JobEntry& entry = **attempt;
  const int world = entry.job.world_size();
  if (!request.success()) {
    FailAttempt(
        entry,
        absl::StrCat(DescribeRank(entry, request.rank()), " failed at step ",
                     w.info.step(), ": ", request.message()),
        "");
    return absl::OkStatus();
  }
  entry.completed.insert(request.rank());
  if (v1::AttemptRecord* a =
          FindAttemptRecord(entry.job, entry.job.attempt())) {
    a->add_completed_ranks(request.rank());
  }
  Persist(entry);
  if (entry.joined.insert(request.rank()).second &&
      static_cast<int>(entry.joined.size()) == world) {
    Transition(entry, v1::JOB_STATE_RUNNING,
               absl::StrCat("all ", world, " rank(s) joined"));
  }
  if (static_cast<int>(entry.completed.size()) == world) {
    Transition(entry, v1::JOB_STATE_SUCCEEDED,
               absl::StrCat("all ", world, " rank(s) completed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<KvStore>> Coordinator::Store(
    const std::string& job_id, int attempt) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindAttempt(job_id, attempt);
  if (!entry.ok()) return entry.status();
  return (*entry)->store;
}

absl::StatusOr<std::shared_ptr<BarrierTable>> Coordinator::Barriers(
    const std::string& job_id, int attempt) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindAttempt(job_id, attempt);
  if (!entry.ok()) return entry.status();
  return (*entry)->barriers;
}

void Coordinator::SweepDeadWorkers(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (auto it = workers_.begin(); it != workers_.end();) {
    WorkerEntry& w = it->second;
    const absl::Duration silent = now - w.last_heartbeat;
    if (w.info.state() == v1::WORKER_STATE_DEAD) {
      // Keep dead workers visible in `gradsync workers` for a while.
      it = silent > 20 * options_.heartbeat_timeout + absl::Minutes(1)
               ? workers_.erase(it)
               : std::next(it);
      continue;
    }
    if (silent <= options_.heartbeat_timeout) {
      ++it;
      continue;
    }
    w.info.set_state(v1::WORKER_STATE_DEAD);
    absl::FPrintF(stderr, "coordinator: worker %s on %s declared dead\n",
                  w.info.worker_id(), w.info.host());
    if (!w.job_id.empty()) {
      JobEntry& entry = jobs_.at(w.job_id);
      // (Named from the worker: a new attempt may hold other ranks.)
      const std::string death = absl::StrCat(
          RankLabel(w.rank, w.info.worker_id(), w.info.host()),
          " missed heartbeats for ", FormatSeconds(silent), " (timeout ",
          FormatSeconds(options_.heartbeat_timeout), "); last step ",
          w.info.step(), ", epoch ", w.info.epoch() + 1);
      if (!AttemptOver(entry.job, w.attempt)) {
        FailAttempt(entry, death, w.info.worker_id());
      } else {
        NoteLateDeath(entry, w.attempt, death);
      }
      Released(w.job_id, w.info.worker_id());
      w.job_id.clear();
    }
    ++it;
  }
  // Restored running jobs whose workers did not all come back in time.
  for (auto& [id, entry] : jobs_) {
    if (entry.awaiting_reconnect.empty() || now < entry.reconnect_deadline ||
        entry.job.state() != v1::JOB_STATE_RUNNING) {
      continue;
    }
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
}

void Coordinator::DetectStalls(absl::Time now) {
  const absl::Duration patience = 3 * options_.heartbeat_interval;
  for (auto& [id, entry] : jobs_) {
    v1::Job& job = entry.job;
    if (job.state() != v1::JOB_STATE_RUNNING) continue;
    struct RankSeq {
      const v1::RankAssignment* rank;
      const WorkerEntry* worker;
    };
    std::vector<RankSeq> ranks;
    int64_t front = 0;
    for (const v1::RankAssignment& r : job.ranks()) {
      auto w = workers_.find(r.worker_id());
      if (w == workers_.end() || w->second.job_id != job.id()) continue;
      ranks.push_back({&r, &w->second});
      front = std::max(front, w->second.info.collective_seq());
    }
    std::vector<std::string> waiting, behind;
    absl::Duration waited = absl::ZeroDuration();
    for (const RankSeq& r : ranks) {
      const absl::Duration still = now - r.worker->seq_since;
      if (still < patience) continue;
      if (r.worker->info.collective_seq() == front) {
        waiting.push_back(absl::StrCat(r.rank->rank()));
        waited = std::max(waited, still);
      } else {
        behind.push_back(absl::StrCat("rank ", r.rank->rank(), " (worker ",
                                      r.rank->worker_id(), " on host ",
                                      r.rank->host(), ", at #",
                                      r.worker->info.collective_seq(),
                                      ", step ", r.worker->info.step(), ")"));
      }
    }
    std::string stall;
    if (!waiting.empty() && !behind.empty()) {
      stall = absl::StrCat(absl::StrJoin(behind, ", "),
                           " has not reached collective #", front,
                           " that rank(s) ", absl::StrJoin(waiting, ", "),
                           " have waited in for ", FormatSeconds(waited));
    }
    // The text follows every tick; a new stall or its end is also an event.
    const std::string key = stall.substr(0, stall.find(" have waited"));
    job.set_stall(stall);
    if (key == entry.stall_key) continue;
    entry.stall_key = key;
    absl::FPrintF(stderr, "coordinator: job %s %s\n", job.id(),
                  stall.empty() ? "no longer stalled" : "stalled: " + stall);
    v1::JobEvent event;
    *event.mutable_job() = Snapshot(entry);
    *event.mutable_summary() = event.job().metrics();
    entry.events->Append(std::move(event));
  }
}

}  // namespace gradsync
