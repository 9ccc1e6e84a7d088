// Coordinator, the WorkerService side: registration, authorization,
// heartbeats, shards (the sample ledger), metrics, completion, and each
// attempt's store and barriers.
#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/bounded_text.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/sample_ledger.h"
#include "coordinator/wire/secrets.h"
#include "foundation/data_index/sampler.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

// 128 random bits as 32 hex digits.
std::string NewWorkerKey() {
  std::random_device random;
  std::string key;
  for (int i = 0; i < 4; ++i)
    absl::StrAppend(&key, absl::Hex(random(), absl::kZeroPad8));
  return key;
}

}  // namespace

using coordinator_internal::AttemptOver;
using coordinator_internal::UnixMs;

absl::StatusOr<v1::RegisterWorkerResponse> Coordinator::RegisterWorker(
    const v1::RegisterWorkerRequest& request) {
  if (request.host().empty()) {
    return absl::InvalidArgumentError(
        "register: host is required (the address peers reach this worker at)");
  }
  if (request.host().size() > coordinator_internal::kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "register: host is ", request.host().size(), " bytes long, more than ",
        coordinator_internal::kMaxNameBytes));
  }
  if (request.devices_size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "register: ", request.devices_size(), " devices, more than 256"));
  }
  for (const v1::Device& d : request.devices()) {
    for (const std::string* text : {&d.kind(), &d.name(), &d.uuid()}) {
      if (text->size() > coordinator_internal::kMaxNameBytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "register: a device's kind, name or uuid is ", text->size(),
            " bytes long, more than ", coordinator_internal::kMaxNameBytes));
      }
    }
  }
  if (request.free_ports_size() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("register: ", request.free_ports_size(),
                     " free_ports, more than 1024"));
  }
  for (int port : request.free_ports()) {
    if (port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "register: free_ports holds ", port, ", outside [1, 65535]"));
    }
  }
  if (request.checkpoint_root().size() > 4096 ||
      (!request.checkpoint_root().empty() &&
       request.checkpoint_root()[0] != '/')) {
    return absl::InvalidArgumentError(
        "register: checkpoint_root must be an absolute path of at most 4096 "
        "bytes");
  }
  if (request.libtorch_version().size() > 32 ||
      !std::all_of(request.libtorch_version().begin(),
                   request.libtorch_version().end(), [](char c) {
                     return absl::ascii_isalnum(
                                static_cast<unsigned char>(c)) ||
                            c == '.' || c == '+' || c == '-' || c == '_';
                   })) {
    return absl::InvalidArgumentError(
        "register: libtorch_version must be at most 32 letters, digits and "
        "'.+-_'");
  }
  if (request.job_id().size() > coordinator_internal::kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "register: job_id is ", request.job_id().size(),
        " bytes long, more than ", coordinator_internal::kMaxNameBytes));
  }
  absl::MutexLock lock(&mu_);
  if (shut_down_) return absl::UnavailableError("coordinator is shutting down");
  if (!request.job_id().empty()) {
    absl::StatusOr<JobEntry*> job = FindJob(request.job_id());
    if (!job.ok()) {
      return absl::NotFoundError(
          absl::StrCat("register: the worker lives for job ", request.job_id(),
                       ", which this coordinator does not "
                       "have (submit it first)"));
    }
    // One that has ended is not an error here: the first heartbeat answers
    // EXIT with its state, the way every such worker learns it.
  }
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
      LivesFor(request, *w);
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
  w.info.set_checkpoint_root(request.checkpoint_root());
  w.info.set_libtorch_version(request.libtorch_version());
  LivesFor(request, w);
  LogLine("coordinator",
          absl::StrFormat(
              "worker %s registered from %s%s", id, request.host(),
              w.info.lives_for_job().empty()
                  ? ""
                  : absl::StrCat(", for job ", w.info.lives_for_job())));
  Schedule();
  response.set_worker_id(id);
  response.set_worker_key(w.key);
  return response;
}

void Coordinator::LivesFor(const v1::RegisterWorkerRequest& request,
                           WorkerEntry& w) {
  w.exit_after_job = request.exit_after_job() || !request.job_id().empty();
  if (!request.job_id().empty()) {
    w.info.set_lives_for_job(request.job_id());
  } else if (w.exit_after_job && !w.job_id.empty()) {
    w.info.set_lives_for_job(w.job_id);  // re-adopted with its task
  }
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
  absl::StatusOr<WorkerEntry*> found = FindWorker(request.task().worker_id());
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
  const bool reports_task = !request.task().job_id().empty();
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
  const std::string& lives_for = w.info.lives_for_job();
  if (w.job_id.empty() && !reports_task && !lives_for.empty()) {
    // A worker that lives for one job leaves once that job is over.
    absl::StatusOr<JobEntry*> job = FindJob(lives_for);
    if (!job.ok() || IsTerminal((*job)->job.state())) {
      response.set_action(v1::ACTION_EXIT);
      if (job.ok()) {
        response.set_job_state((*job)->job.state());
        response.set_reason(absl::StrCat("job ", lives_for, " ",
                                         JobStateName((*job)->job.state()),
                                         ": ", (*job)->job.message()));
      } else {
        response.set_reason(
            absl::StrCat("job ", lives_for, " no longer exists"));
      }
      return response;
    }
  }
  if (w.job_id.empty()) {
    if (reports_task) {
      response.set_action(v1::ACTION_STOP);
      response.set_reason(absl::StrCat("job ", request.task().job_id(),
                                       " attempt ", request.task().attempt(),
                                       " is not assigned to this worker"));
      w.info.set_state(v1::WORKER_STATE_STOPPING);
      return response;
    }
    // A worker that just became idle may let a pending job start: schedule
    // now. Beats of one that already was idle retry pending jobs (whose
    // GPUs or workers may have been freed since) at most every
    // kIdleRescheduleGap: with thousands of idle workers a pass over all of
    // them per beat would take the coordinator's whole CPU.
    const bool newly_idle = w.info.state() != v1::WORKER_STATE_IDLE;
    w.info.set_state(v1::WORKER_STATE_IDLE);
    if (newly_idle || w.last_heartbeat - last_idle_schedule_ >=
                          coordinator_internal::kIdleRescheduleGap) {
      last_idle_schedule_ = w.last_heartbeat;
      Schedule();
    }
    if (w.job_id.empty()) return response;  // still idle
  }

  JobEntry& entry = jobs_.at(w.job_id);
  const v1::Job& job = entry.job;
  if (request.task().job_id() != w.job_id ||
      request.task().attempt() != w.attempt) {
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
    if (absl::StatusOr<WorkerEntry*> w = FindWorker(request.task().worker_id());
        !w.ok()) {
      return w.status();
    }
    absl::StatusOr<JobEntry*> entry =
        FindAttempt(request.task().job_id(), request.task().attempt());
    if (!entry.ok()) return entry.status();
    v1::Job& job = (*entry)->job;
    if (request.epoch() < 0 || request.epoch() >= job.spec().epochs()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: epoch must be in [0, ", job.spec().epochs(),
                       ") (got ", request.epoch(), ")"));
    }
    if (request.task().rank() < 0 ||
        request.task().rank() >= job.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: rank ", request.task().rank(),
                       " is outside [0, ", job.world_size(), ")"));
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
        EvalShardIndices(n, world, request.task().rank());
    if (!indices.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("get shard: ", indices.status().message()));
    }
    response.mutable_indices()->Assign(indices->begin(), indices->end());
    response.set_total_size(n);
    return response;
  }
  const std::vector<int64_t> indices =
      SegmentShard(segment, spec, n, request.epoch(), request.task().rank());
  response.mutable_indices()->Assign(indices.begin(), indices.end());
  response.set_total_size(
      DistributedNumSamples(segment.length(), world, spec.drop_last()) * world);
  return response;
}

absl::Status Coordinator::ReportMetrics(
    const v1::ReportMetricsRequest& request) {
  absl::MutexLock lock(&mu_);
  if (absl::StatusOr<WorkerEntry*> w = FindWorker(request.task().worker_id());
      !w.ok()) {
    return w.status();
  }
  absl::StatusOr<JobEntry*> found =
      FindAttempt(request.task().job_id(), request.task().attempt());
  if (!found.ok()) return found.status();
  JobEntry& entry = **found;
  if (request.eval_size() > coordinator_internal::kMaxEvalPerReport ||
      request.checkpoints_size() > coordinator_internal::kMaxEvalPerReport) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report metrics: ", request.eval_size(), " evaluations and ",
        request.checkpoints_size(), " checkpoints in one report, more than ",
        coordinator_internal::kMaxEvalPerReport, " of either"));
  }
  for (const v1::StepMetrics& step : request.steps()) {
    if (step.rank() < 0 || step.rank() >= entry.job.world_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("report metrics: rank ", step.rank(), " is outside [0, ",
                       entry.job.world_size(), ")"));
    }
  }
  if (request.logs_size() > coordinator_internal::kMaxLogLinesPerReport ||
      request.logs_dropped() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report metrics: ", request.logs_size(), " log lines (at most ",
        coordinator_internal::kMaxLogLinesPerReport, ") and ",
        request.logs_dropped(), " dropped (must be >= 0)"));
  }
  if ((request.logs_size() > 0 || request.logs_dropped() > 0) &&
      (request.task().rank() < 0 ||
       request.task().rank() >= entry.job.world_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report metrics: log lines of rank ", request.task().rank(),
        ", outside [0, ", entry.job.world_size(), ")"));
  }
  for (const v1::CheckpointCommit& commit : request.checkpoints()) {
    if (commit.path().empty() || commit.step() < 0 || commit.epoch() < 0 ||
        commit.epoch() > entry.job.spec().epochs() ||
        commit.epoch_batch() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "report metrics: checkpoint commit (path '", commit.path(),
          "', epoch ", commit.epoch(), ", epoch_batch ", commit.epoch_batch(),
          ", step ", commit.step(), ") is outside the job's ",
          entry.job.spec().epochs(), " epoch(s) or has no path"));
    }
  }
  for (const v1::StepMetrics& step : request.steps()) {
    entry.metrics.AddStep(step);
  }
  for (const v1::EvalMetrics& eval : request.eval()) {
    entry.metrics.AddEval(eval);
  }
  for (const v1::LogLine& line : request.logs()) {
    entry.logs.Append(request.task().rank(), request.task().attempt(), line);
  }
  entry.logs.CountDropped(request.task().rank(), request.logs_dropped());
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

absl::Status Coordinator::Deregister(const v1::DeregisterRequest& request) {
  if (request.reason().size() > coordinator_internal::kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "deregister: reason is ", request.reason().size(),
        " bytes long, more than ", coordinator_internal::kMaxNameBytes));
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<WorkerEntry*> found = FindWorker(request.task().worker_id());
  if (!found.ok()) return found.status();
  WorkerEntry& w = **found;
  const std::string why =
      request.reason().empty() ? "" : absl::StrCat(" (", request.reason(), ")");
  LogLine("coordinator",
          absl::StrFormat("worker %s on %s left%s", w.info.worker_id(),
                          w.info.host(), why));
  LoseWorker(w, absl::StrCat(coordinator_internal::RankLabel(
                                 w.rank, w.info.worker_id(), w.info.host()),
                             " left: its worker shut down", why, "; last step ",
                             w.info.step(), ", epoch ", w.info.epoch() + 1));
  const std::string id = w.info.worker_id();  // (w goes with the erase)
  workers_.erase(id);
  Schedule();
  return absl::OkStatus();
}

absl::Status Coordinator::CompleteTask(const v1::CompleteTaskRequest& request) {
  // The message is stored (attempt outcome, history, job message): bounded.
  const std::string message = Bounded(request.message(), kMaxMessageBytes);
  absl::MutexLock lock(&mu_);
  absl::StatusOr<WorkerEntry*> found = FindWorker(request.task().worker_id());
  if (!found.ok()) return found.status();
  WorkerEntry& w = **found;
  if (w.job_id != request.task().job_id() ||
      w.attempt != request.task().attempt() ||
      w.rank != request.task().rank()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "complete task: worker ", w.info.worker_id(), " is not rank ",
        request.task().rank(), " of job ", request.task().job_id(), " attempt ",
        request.task().attempt()));
  }
  absl::StatusOr<JobEntry*> attempt =
      FindAttempt(request.task().job_id(), request.task().attempt());
  if (!attempt.ok()) return attempt.status();
  JobEntry& entry = **attempt;
  const int world = entry.job.world_size();
  if (!request.success()) {
    if (v1::AttemptRecord* a =
            FindAttemptRecord(entry.job, entry.job.attempt())) {
      a->set_failed_rank(request.task().rank());
    }
    FailAttempt(entry,
                absl::StrCat(DescribeRank(entry, request.task().rank()),
                             " failed at step ", w.info.step(), ": ", message),
                "", message);
    return absl::OkStatus();
  }
  entry.completed.insert(request.task().rank());
  if (v1::AttemptRecord* a =
          FindAttemptRecord(entry.job, entry.job.attempt())) {
    a->add_completed_ranks(request.task().rank());
  }
  Persist(entry);
  if (entry.joined.insert(request.task().rank()).second &&
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

absl::StatusOr<std::shared_ptr<MemoryStore>> Coordinator::Store(
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

}  // namespace gradsync
