// Coordinator, scheduler: pending jobs onto idle workers (ranks, ports,
// the attempt's store and barriers) and the assignments workers receive.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/rank_plan.h"

namespace gradsync {

using coordinator_internal::FormatSeconds;
using coordinator_internal::UnixMs;

void Coordinator::Schedule() {
  if (shut_down_) return;
  const absl::Time now = absl::Now();
  // In submission order (active_ is keyed by it); copied, as starting or
  // failing a job changes active_.
  std::vector<JobEntry*> pending;
  for (auto& [seq, entry] : active_) {
    if (entry->job.state() != v1::JOB_STATE_PENDING) continue;
    // A restart first waits for the failed attempt's live workers.
    if (!entry->awaiting_release.empty() && now < entry->restart_deadline) {
      continue;
    }
    pending.push_back(entry);
  }
  // Most calls (every idle heartbeat of a large fleet) find nothing to do:
  // they must not pay for the scan of every worker below.
  if (pending.empty()) return;
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
    // Workers that live for another job are not this one's.
    std::vector<WorkerEntry*> usable;
    for (WorkerEntry* w : idle) {
      const std::string& lives_for = w->info.lives_for_job();
      if (lives_for.empty() || lives_for == entry->job.id()) {
        usable.push_back(w);
      }
    }
    const bool started = !usable.empty() && TryStart(*entry, usable);
    if (started) {
      idle.erase(std::remove_if(
                     idle.begin(), idle.end(),
                     [](const WorkerEntry* w) { return !w->job_id.empty(); }),
                 idle.end());
    }
    const v1::AttemptRecord* last =
        FindAttemptRecord(entry->job, entry->job.attempt());
    const int64_t replace_by = entry->job.replacement_deadline_unix_ms();
    if (!started && entry->job.restarts() > 0 && last != nullptr &&
        last->ended_unix_ms() > 0 && now >= entry->restored_grace_until &&
        (replace_by == 0 || now >= absl::FromUnixMillis(replace_by))) {
      // The failed attempt's workers are back or gone, too few remain and
      // the restart wait (if any) is over: a restart does not wait for
      // workers that may never come.
      const int min_workers = entry->job.spec().world_size().min_workers();
      Transition(
          *entry, v1::JOB_STATE_FAILED,
          absl::StrCat(
              entry->restart_reason, "; cannot restart: ", usable.size(),
              " idle worker(s) after the failed attempt's workers were "
              "released",
              replace_by > 0
                  ? absl::StrCat(" and the restart wait of ",
                                 FormatSeconds(absl::Milliseconds(
                                     entry->job.spec().restart_wait_ms())),
                                 " ended")
                  : std::string(),
              ", the job needs at least ", min_workers));
    }
  }
}

namespace {

// The GPUs a worker offers, by identity: the UUID, or "cuda:<index>" from a
// worker that sent none (then every worker on the host counts as seeing
// the same GPUs, which errs on the side of not sharing).
std::vector<std::string> OfferedGpus(const v1::WorkerInfo& w) {
  std::vector<std::string> gpus;
  for (const v1::Device& d : w.devices()) {
    if (d.kind() != "cuda") continue;
    gpus.push_back(d.uuid().empty() ? absl::StrCat("cuda:", d.index())
                                    : d.uuid());
  }
  return gpus;
}

}  // namespace

TakenGpus Coordinator::GpusInUse() const {
  TakenGpus taken;
  for (const auto& [seq, entry] : active_) {
    const v1::JobState state = entry->job.state();
    if (state != v1::JOB_STATE_RENDEZVOUS && state != v1::JOB_STATE_RUNNING) {
      continue;
    }
    for (const v1::RankAssignment& r : entry->job.ranks()) {
      if (!r.gpu().empty()) taken.insert({r.host(), r.gpu()});
    }
  }
  return taken;
}

bool Coordinator::TryStart(JobEntry& entry, std::vector<WorkerEntry*>& idle) {
  v1::Job& job = entry.job;
  const v1::WorldSize& ws = job.spec().world_size();
  std::vector<IdleWorker> offered;
  for (const WorkerEntry* w : idle) {
    offered.push_back({w->info.host(), OfferedGpus(w->info)});
  }
  const RankPlan plan = PlanRanks(offered, ws.min_workers(), ws.max_workers(),
                                  job.spec().backend(), GpusInUse());
  if (!plan.start) {
    if (!plan.wait_message.empty()) job.set_message(plan.wait_message);
    return false;
  }
  const int world = static_cast<int>(plan.workers.size());
  std::vector<WorkerEntry*> chosen;
  for (int w : plan.workers) chosen.push_back(idle[w]);
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

  job.set_attempt(job.attempt() + 1);
  job.set_world_size(world);
  v1::AttemptRecord* record = job.add_attempts();
  record->set_attempt(job.attempt());
  record->set_world_size(world);
  record->set_started_unix_ms(UnixMs(absl::Now()));
  entry.awaiting_release.clear();
  job.set_master_addr(master);
  job.set_master_port(*port);
  job.set_backend(plan.nccl ? v1::BACKEND_NCCL : v1::BACKEND_GLOO);
  job.clear_ranks();
  entry.joined.clear();
  entry.completed.clear();
  entry.metrics.ResetSteps();
  entry.store =
      std::make_shared<MemoryStore>(coordinator_internal::kAttemptStoreLimits);
  entry.barriers = std::make_shared<BarrierTable>(
      world, coordinator_internal::kMaxBarriersPerAttempt,
      coordinator_internal::kMaxNameBytes);
  std::vector<std::string> described;
  for (int rank = 0; rank < world; ++rank) {
    WorkerEntry& w = *chosen[rank];
    v1::RankAssignment* r = job.add_ranks();
    r->set_rank(rank);
    r->set_local_rank(plan.local_rank[rank]);
    r->set_worker_id(w.info.worker_id());
    r->set_host(w.info.host());
    if (plan.nccl) {
      const int d = plan.cuda_device[rank];
      r->set_cuda_device(d);
      r->set_gpu(offered[plan.workers[rank]].gpus[d]);
    }
    w.job_id = job.id();
    w.attempt = job.attempt();
    w.rank = rank;
    if (w.exit_after_job) w.info.set_lives_for_job(job.id());
    if (persister_ != nullptr)
      persister_->SaveWorkerKey(w.info.worker_id(), w.key);
    w.info.set_state(v1::WORKER_STATE_STARTING);
    w.info.set_job_id(job.id());
    w.info.set_rank(rank);
    described.push_back(
        absl::StrCat(rank, "=", w.info.worker_id(), "@", w.info.host()));
  }
  job.set_replacement_deadline_unix_ms(0);  // replacements came
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
  a.set_cuda_device(job.ranks(rank).cuda_device());
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
    // (pinned at submit), at that snapshot's own position. It travels as
    // the snapshot it is; resume_from stays empty (it names files).
    a.set_has_resume_snapshot(true);
    a.set_resume_snapshot_job(c.resume_snapshot_job());
    a.set_resume_snapshot_step(c.resume_snapshot_step());
  }
  a.set_train_samples(job.train_samples());
  a.set_eval_samples(job.eval_samples());
  return a;
}

// ---------------------------------------------------------------- jobs

}  // namespace gradsync
