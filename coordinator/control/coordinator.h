// Coordinator: the control plane's state and rules, independent of gRPC.
// It owns the registered workers, the jobs and their state machine, the
// scheduler (idle workers -> ranks), the failure detector, each job
// attempt's key-value store and barriers, shard planning and metrics.
// JobServiceImpl and WorkerServiceImpl (coordinator/server/) are thin gRPC
// adapters over it.
//
// One class, one lock, implemented by responsibility: coordinator.cc (state
// machine, lookups), job_api.cc, worker_api.cc, scheduler.cc, recovery.cc
// (restore, restarts) and failure_detector.cc. The parts share one mutex on
// purpose: scheduling, failure detection and recovery each change jobs and
// workers together, and one lock keeps every such change atomic without a
// lock order to get wrong. Their decisions are pure functions over plain
// inputs, tested without a Coordinator: which idle workers become which
// ranks and GPUs (rank_plan.h, gpu_placement.h), when a worker is dead or
// a job stalled (failure_rules.h), whether a failed attempt restarts
// (restart_policy.h); the Coordinator gathers their inputs under its lock
// and applies their answers.
//
// Thread-safe: every public method may be called from any thread. Blocking
// waits (store, barrier, events) happen outside the coordinator's lock.
// Errors: INVALID_ARGUMENT (bad request, naming the field), NOT_FOUND
// (unknown job or worker), PERMISSION_DENIED (a worker acting for a worker,
// job or rank it is not), FAILED_PRECONDITION (wrong state or stale
// attempt), ABORTED (the job ended while waiting).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/control/barrier.h"
#include "coordinator/control/event_log.h"
#include "coordinator/control/gpu_placement.h"
#include "coordinator/control/job_logs.h"
#include "coordinator/control/metrics_aggregator.h"
#include "coordinator/control/port_allocator.h"
#include "coordinator/persist/job_persister.h"
#include "coordinator/persist/job_store.h"
#include "foundation/data_index/image_folder_index.h"
#include "foundation/store/memory_store.h"
#include "gradsync/v1/job_service.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

struct CoordinatorOptions {
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A worker silent for longer is declared dead.
  absl::Duration heartbeat_timeout = absl::Seconds(3);
  // Data-plane ports handed out when a worker offered none.
  int port_range_first = 29500;
  int port_range_last = 29999;
  int max_world_size = 1024;
  // Resource limits: jobs not yet ended (pending or running) and live
  // registered workers; beyond them SubmitJob / RegisterWorker answer
  // RESOURCE_EXHAUSTED.
  int max_active_jobs = 1000;
  int max_workers = 10000;
  // Retention of finished jobs (SUCCEEDED, FAILED, CANCELLED): beyond this
  // many, or older than `finished_job_ttl` since they ended, the oldest are
  // deleted (record, events, persisted row; see on_job_deleted). Checked
  // on every failure-detector sweep.
  int max_finished_jobs = 1000;
  absl::Duration finished_job_ttl = absl::Hours(24 * 30);
  // Called (under the coordinator's lock: it must not call back into the
  // Coordinator) with the id of each job deleted, by DeleteJob or by
  // retention, so that what lives elsewhere (model snapshots) goes too.
  std::function<void(const std::string& job_id)> on_job_deleted;
  // Dataset paths must lie under one of these (see data_roots.h); empty:
  // anywhere.
  std::vector<std::string> data_roots;
  // After a restart, how long a running job waits for its workers to
  // re-register.
  absl::Duration reconnect_grace = absl::Seconds(30);
  // Upper bound for any blocking call (store get/wait, barrier).
  absl::Duration max_wait = absl::Minutes(10);
  // A data set's scan on submission stops after this long
  // (DEADLINE_EXCEEDED), whatever the client's deadline.
  absl::Duration max_scan_time = absl::Minutes(5);
  // A ListJobs page ends before its jobs (abridged, job_views.h) would
  // pass this many bytes; it always holds at least one job.
  size_t max_list_page_bytes = 4 << 20;
  // Run the failure detector on a background thread. Tests that drive
  // SweepDeadWorkers() themselves turn it off.
  bool run_failure_detector = true;
  // Suffix of worker ids, 1..0xffff; 0 = random per coordinator run (ids of
  // different runs then differ). Fixed only where ids must be predictable.
  int incarnation = 0;
};

class Coordinator {
 public:
  // `store` persists jobs (may be null: nothing persisted). Jobs found in
  // it are restored: PENDING ones are queued again; RUNNING ones keep
  // running (their data plane does not need the coordinator) and wait
  // `reconnect_grace` for their workers to re-register with their task
  // (RegisterWorkerRequest.resume), after which a missing rank fails the
  // attempt as a dead one would; RENDEZVOUS ones restart their attempt.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      CoordinatorOptions options, std::unique_ptr<JobStore> store);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Wakes every blocked call with UNAVAILABLE, stops the failure detector
  // and writes what is still queued for the job store (up to 5 s).
  // Idempotent; the destructor calls it.
  void Shutdown();

  const CoordinatorOptions& options() const { return options_; }

  // ---- JobService (job_api.cc) ----
  // `scan` bounds the data set's scan (the caller's deadline and whether
  // it gave up); the coordinator adds max_scan_time and its own shutdown.
  absl::StatusOr<v1::Job> SubmitJob(v1::JobSpec spec, ScanBudget scan = {});
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  // Records the trained module rank 0 uploaded (Job.trained_model_sha256).
  // Unknown jobs are ignored.
  void SetTrainedModel(const std::string& job_id, const std::string& sha256);
  // Every job (finished ones too, until deleted) whose spec trains the
  // model file `sha256`, or that trained it, oldest first.
  std::vector<std::string> JobsUsingModelFile(const std::string& sha256);
  // The job's training curve and evaluations (metrics_aggregator.h).
  absl::StatusOr<v1::JobCurves> GetJobCurves(const std::string& job_id);
  // The outcome of storing one of the job's snapshots: an error (the
  // coordinator's storage is full) sets Job.snapshot_error, counts it in
  // snapshot_failures and is logged when it changes; OK clears it. Unknown
  // jobs are ignored.
  void NoteSnapshotStorage(const std::string& job_id,
                           const absl::Status& status);
  // The job's log lines (job_logs.h; GetJobLogsRequest's fields).
  absl::StatusOr<v1::GetJobLogsResponse> GetJobLogs(
      const v1::GetJobLogsRequest& request);
  // Jobs newest first, abridged (job_views.h), `page_size` of them (0 =
  // kDefaultPageSize, at most kMaxPageSize; fewer when the page would pass
  // max_list_page_bytes) after `page_token` (a next_page_token from an
  // earlier page; INVALID_ARGUMENT when it is not one). Pages stay consistent
  // while jobs are added or deleted: a token names where the last page
  // ended, not an offset.
  static constexpr int kDefaultPageSize = 100;
  static constexpr int kMaxPageSize = 1000;
  struct JobPage {
    std::vector<v1::Job> jobs;
    std::string next_page_token;  // empty on the last page
  };
  absl::StatusOr<JobPage> ListJobs(int page_size,
                                   const std::string& page_token);
  // Forgets a finished job (see CoordinatorOptions::on_job_deleted);
  // FAILED_PRECONDITION while it is not terminal, NOT_FOUND if unknown.
  absl::Status DeleteJob(const std::string& job_id);
  absl::StatusOr<v1::Job> CancelJob(const std::string& job_id,
                                    const std::string& reason);
  // The job's event log (for WatchJob) and its current record.
  absl::StatusOr<std::shared_ptr<EventLog>> JobEvents(
      const std::string& job_id);
  std::vector<v1::WorkerInfo> ListWorkers();

  // ---- WorkerService (worker_api.cc) ----
  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request);
  // Whether the caller holding `key` (RegisterWorkerResponse.worker_key) is
  // worker `worker_id` and, when `job_id` is set, runs the current attempt
  // `attempt` of that job, as rank `rank` unless rank < 0. NOT_FOUND: an
  // unknown worker (register again); PERMISSION_DENIED: a wrong key, or a
  // job or rank not assigned to this worker; FAILED_PRECONDITION / ABORTED:
  // a stale or ended attempt. WorkerServiceImpl calls it before every call
  // but RegisterWorker.
  absl::Status AuthorizeWorker(const std::string& worker_id,
                               const std::string& key,
                               const std::string& job_id, int attempt,
                               int rank);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request);
  absl::StatusOr<v1::GetShardResponse> GetShard(
      const v1::GetShardRequest& request);
  absl::Status ReportMetrics(const v1::ReportMetricsRequest& request);
  absl::Status CompleteTask(const v1::CompleteTaskRequest& request);
  // The worker leaves: its running attempt fails now (as by a death) and
  // the worker is forgotten. NOT_FOUND for an unknown worker.
  absl::Status Deregister(const v1::DeregisterRequest& request);
  // The store and barriers of a job's current attempt.
  absl::StatusOr<std::shared_ptr<MemoryStore>> Store(const std::string& job_id,
                                                     int attempt);
  absl::StatusOr<std::shared_ptr<BarrierTable>> Barriers(
      const std::string& job_id, int attempt);

  // Declares dead every worker whose last heartbeat is older than the
  // heartbeat timeout at `now`, failing the jobs they ran, and updates each
  // running job's stall (job.proto) from the ranks' collective sequence
  // numbers. The background detector calls it; public so tests can drive it.
  void SweepDeadWorkers(absl::Time now);

 private:
  struct JobEntry {
    v1::Job job;
    int64_t queue_seq = 0;  // submission order
    std::shared_ptr<EventLog> events = std::make_shared<EventLog>();
    MetricsAggregator metrics;
    JobLogs logs;
    std::shared_ptr<MemoryStore> store;
    std::shared_ptr<BarrierTable> barriers;
    std::set<int> joined;     // ranks that acknowledged the assignment
    std::set<int> completed;  // ranks that completed successfully
    // After a failed attempt: its live workers not yet back (idle or dead).
    // The restart waits for them until restart_deadline, so that the new
    // rendezvous can include them.
    std::set<std::string> awaiting_release;
    absl::Time restart_deadline = absl::InfinitePast();
    std::string restart_reason;  // why the last attempt failed
    // Restored from the job store: until then, a pending restart is not
    // failed for want of workers (they are still re-registering).
    absl::Time restored_grace_until = absl::InfinitePast();
    std::string stall_key;  // the reported stall, without its duration
    // Restored RUNNING job: ranks' workers not yet re-registered, and until
    // when they may.
    std::set<std::string> awaiting_reconnect;
    absl::Time reconnect_deadline = absl::InfiniteFuture();
    absl::Time metrics_persisted = absl::InfinitePast();
    // When its trail (curve, newest log lines) was last handed to the
    // persister: at most every kTrailEvery while it runs, and when it ends.
    absl::Time trail_persisted = absl::InfinitePast();
    // When it became terminal (finished_'s key), for retention.
    int64_t finished_unix_ms = 0;
    // The last failed write of its record (Job.persist_error); in memory.
    std::string persist_error;
  };
  struct WorkerEntry {
    v1::WorkerInfo info;
    std::vector<int> free_ports;
    absl::Time last_heartbeat;
    int64_t seq = 0;  // registration order
    std::string key;  // secret handed out at registration
    // When the collective sequence in its heartbeats last changed.
    absl::Time seq_since = absl::InfinitePast();
    // Current task; empty job_id = none.
    std::string job_id;
    int attempt = 0;
    int rank = -1;
    // A worker that lives for one job (RegisterWorkerRequest.job_id or
    // exit_after_job); info.lives_for_job() is that job once known
    // (scheduled only onto its attempts; EXIT once it has ended), empty =
    // any job.
    bool exit_after_job = false;
  };

  Coordinator(CoordinatorOptions options, std::unique_ptr<JobStore> store);
  absl::Status Restore() ABSL_LOCKS_EXCLUDED(mu_);
  // RegisterWorker with `resume`: re-adopts the worker under its old id
  // when its task is the running attempt of a restored job and its key
  // matches; null otherwise (it then registers afresh).
  WorkerEntry* Readopt(const v1::RegisterWorkerRequest& request, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DetectorLoop();
  // Records whether `w` lives for one job (RegisterWorkerRequest.job_id,
  // exit_after_job).
  void LivesFor(const v1::RegisterWorkerRequest& request, WorkerEntry& w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::StatusOr<JobEntry*> FindJob(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<WorkerEntry*> FindWorker(const std::string& worker_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A live attempt of a job: NOT_FOUND / FAILED_PRECONDITION otherwise.
  absl::StatusOr<JobEntry*> FindAttempt(const std::string& job_id, int attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a job to `to`, recording the reason, publishing the event and
  // persisting the record. Terminal states also close the attempt's store
  // and barriers, release the port and close the event log.
  void Transition(JobEntry& entry, v1::JobState to, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The current attempt of a job failed (`reason` names the rank, host and
  // step): restarts the job (back to PENDING, a new rendezvous later) when
  // its restart budget and the live workers allow, else fails it.
  // `dead_worker` (may be empty) is not counted as available. `error` is
  // the error a rank reported (empty for a dead or hung worker): the same
  // error twice in a row fails the job instead of trying a third time.
  void FailAttempt(JobEntry& entry, const std::string& reason,
                   const std::string& dead_worker,
                   const std::string& error = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Worker `w` is gone (dead, or left) while assigned to a job: its rank's
  // attempt fails for `what` (or, when that attempt is already over, `what`
  // is noted on it) and the worker is released from the job.
  void LoseWorker(WorkerEntry& w, const std::string& what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker of attempt `attempt`, which already ended, was declared dead:
  // `death` is added to that attempt's outcome (and to the pending
  // restart's reason).
  void NoteLateDeath(JobEntry& entry, int attempt, const std::string& death)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker of `job_id`'s last attempt is back (idle) or dead.
  void Released(const std::string& job_id, const std::string& worker_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Names the ranks of running jobs that lag behind a collective the others
  // have waited in for 3 heartbeat intervals (Job.stall), publishing a
  // change as an event.
  void DetectStalls(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts every pending job that enough idle workers can run; fails
  // restarting jobs that can no longer get min_workers.
  void Schedule() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TryStart(JobEntry& entry, std::vector<WorkerEntry*>& idle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // (host, GPU) pairs held by the ranks of jobs in rendezvous or running.
  TakenGpus GpusInUse() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Assignment MakeAssignment(const JobEntry& entry, int rank) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the record for the persister (written outside the lock).
  // Saves the job's record and, when due, its trail (JobTrail).
  void Persist(JobEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The persister's report on a job's write: sets or clears the job's
  // persist_error and publishes the change as an event.
  void OnPersisted(const std::string& job_id, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);

  // RESOURCE_EXHAUSTED when max_active_jobs are pending or running.
  absl::Status CheckActiveJobLimit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Files a job under active_ or finished_ by its current state; called
  // whenever a job is added or changes state.
  void Index(JobEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes a finished job everywhere (workers still holding it let go).
  // Never called while a caller up the stack holds a JobEntry reference:
  // only from DeleteJob and EnforceRetention.
  void Forget(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes finished jobs beyond max_finished_jobs or finished_job_ttl.
  void EnforceRetention(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends the job as it is now (abridged, job_views.h, with its metrics
  // summary) to its event log: what watchers see of a change.
  void PublishJob(JobEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Job Snapshot(const JobEntry& entry) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string DescribeRank(const JobEntry& entry, int rank) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  const std::unique_ptr<JobStore> job_store_;
  // Writes to job_store_ (null without one). Declared after it: destroyed
  // (flushed) first.
  std::unique_ptr<JobPersister> persister_;
  const uint32_t incarnation_;

  absl::Mutex mu_;
  std::map<std::string, JobEntry> jobs_ ABSL_GUARDED_BY(mu_);
  // Indexes into jobs_ by queue_seq: every job, and the jobs not yet ended
  // (what the scheduler and the failure detector walk, so that finished
  // jobs cost nothing per heartbeat). finished_ orders the ended ones by
  // (finished_unix_ms, queue_seq) for retention.
  std::map<int64_t, JobEntry*> by_seq_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, JobEntry*> active_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int64_t, int64_t>> finished_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerEntry> workers_ ABSL_GUARDED_BY(mu_);
  PortAllocator ports_ ABSL_GUARDED_BY(mu_);
  int64_t next_job_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_worker_ ABSL_GUARDED_BY(mu_) = 1;
  // When an idle worker's heartbeat last ran Schedule() (worker_api.cc).
  absl::Time last_idle_schedule_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Keys of workers assigned to jobs before a restart (JobStore).
  std::map<std::string, std::string> restored_keys_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> stopping_{false};  // shut_down_, for scans outside mu_

  absl::Notification stop_detector_;
  std::thread detector_;
};

}  // namespace gradsync
