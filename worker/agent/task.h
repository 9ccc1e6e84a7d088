// Task: one assignment (rank r of W in a job attempt) that the agent runs
// on a thread of its own: the communicator of the job's backend over the
// coordinator's store (RemoteStore), the trainer fed with shards from
// GetShard, metrics reported in batches by a flusher twice a second,
// checkpoints uploaded as snapshots (rank 0) before they are reported
// committed, a resume snapshot downloaded when the assignment names one,
// and CompleteTask at the end. Calls that fail because the coordinator is
// away are retried with backoff for up to kRetryFor, so training outlives a
// coordinator restart.
//
// Thread safety: the agent's thread creates, starts, cancels and destroys
// it (the destructor joins) and reads its progress (done, step, epoch,
// collective_seq) at any time; everything else runs on the task's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gradsync/v1/worker_service.grpc.pb.h"
#include "worker/agent/agent_options.h"
#include "worker/agent/metrics_buffer.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_context.h"
#include "worker/train/train_spec.h"

namespace gradsync {

class Task {
 public:
  static constexpr absl::Duration kRetryFor = absl::Minutes(2);

  // `worker_id` and `worker_key`: the registration the task was assigned
  // to; its calls act as this worker. `agent_stop` ends retries early.
  Task(std::shared_ptr<v1::WorkerService::StubInterface> stub,
       const AgentOptions& options, v1::Assignment assignment,
       std::string worker_id, std::string worker_key,
       const absl::Notification& agent_stop);
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  void Start();
  // Training stops at its next step, and a collective in flight is
  // aborted (the attempt is over: peers may be dead or hung, and waiting
  // for its deadline would hold this worker that long); the task reports
  // nothing more.
  void Cancel();
  bool cancelled() const { return cancel_; }
  bool done() const { return done_; }

  const v1::Assignment& assignment() const { return assignment_; }
  const std::string& worker_id() const { return worker_id_; }
  const std::string& worker_key() const { return worker_key_; }
  // The TaskRef every call for this task carries.
  v1::TaskRef Ref() const;
  int64_t step() const { return step_; }
  int epoch() const { return epoch_; }
  // The last collective entered (0 before the communicator exists).
  int64_t collective_seq() const;

 private:
  // checkpoint.directory and resume_from under options_.checkpoint_root
  // (relative: under it; absolute: must resolve into it), else
  // PERMISSION_DENIED naming the field.
  absl::Status ConfineCheckpointPaths(TrainSpec& spec) const;
  void Run();
  // The model ran past the step timeout (step_deadline.h) and the task's
  // thread is stuck inside it: the task fails with `overrun` (unless
  // cancelled) and the process ends (EndProcessAfterOverrun), for the
  // worker's supervisor to start a fresh one. On the watchdog's thread.
  [[noreturn]] void EndAfterOverrun(const absl::Status& overrun);
  // "job J rank R failed: <status>" to the task's log (and so to the job's
  // logs and a failed job's status).
  void LogFailure(const absl::Status& status);
  // One CompleteTask call (10 s deadline) reporting the task's end.
  absl::Status CompleteOnce(bool success, const std::string& message);
  // A line of this task's log: printed, and shipped with the metrics.
  void Log(const std::string& line);
  // Reports the buffered metrics; on a retryable error keeps them for the
  // next call. OK when nothing is left to report.
  absl::Status FlushMetrics();
  // The checkpoint file of `commit` to the coordinator (rank 0).
  absl::Status UploadSnapshot(const v1::CheckpointCommit& commit);
  // The snapshot the assignment resumes from, checksum verified.
  absl::StatusOr<std::vector<char>> DownloadSnapshot();
  // The job's model file, fetched (or found in the cache) and named in
  // `c`'s spec, with the digest check the trainer runs on its bytes; OK
  // and nothing done for a built-in model.
  absl::Status FetchModelFile(TrainContext& c);
  absl::StatusOr<std::string> DownloadModelFile();
  // Rank 0: the trained module (TrainResult::torchscript) to the
  // coordinator.
  absl::Status UploadTrainedModel(const std::string& path);
  // `call` until it succeeds, fails for good, the task is cancelled, the
  // agent stops or kRetryFor passes, with backoff; logs once.
  absl::Status Retry(const std::string& what,
                     const std::function<absl::Status()>& call);

  const std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const AgentOptions options_;
  const v1::Assignment assignment_;
  const std::string worker_id_;
  const std::string worker_key_;
  const absl::Notification& agent_stop_;
  std::atomic<bool> cancel_{false};
  // The task's own model file cache when the agent has none.
  std::shared_ptr<ModelFileCache> task_model_files_;
  std::atomic<bool> done_{false};
  std::atomic<int64_t> step_{0};
  std::atomic<int> epoch_{0};
  // Owned here rather than by Run, so the agent's thread may read its
  // sequence until the task itself is destroyed (after join).
  std::unique_ptr<Communicator> comm_owned_;
  std::atomic<Communicator*> comm_{nullptr};
  MetricsBuffer metrics_;  // not yet reported
  // The flusher's, and an overrun's last flush (EndAfterOverrun).
  std::atomic<bool> metrics_failing_{false};
  std::atomic<double> accuracy_{-1};  // last evaluation (rank 0)
  std::thread thread_;
};

}  // namespace gradsync
