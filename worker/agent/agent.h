// Agent: the worker process's loop (`gradsync-worker`). Registers with the
// coordinator, heartbeats, runs the task it is assigned (rank r of W) on a
// task thread with the Trainer over a communicator of the job's backend
// (gloo or NCCL, CreateCommunicator) bootstrapped through the coordinator's
// store (RemoteStore), reports metrics in batches, completes the task and
// returns to idle; one agent runs many jobs one after another.
//
// It sets the torchrun environment names (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT) for the task and logs them.
//
// The task outlives the coordinator: while the coordinator is unreachable
// training goes on, metrics are buffered, and shard requests and the task's
// completion are retried with backoff (up to kRetryFor); when a restarted
// coordinator no longer knows the worker, it registers again with its task
// and carries on if the coordinator re-adopts it (abandons the task if not).
//
// Thread safety: Run() on one thread; Stop() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

struct AgentOptions {
  std::string host = "127.0.0.1";  // address peers and logs use
  std::vector<int> free_ports;     // offered for MASTER_PORT
  int log_every = 50;              // steps between progress log lines
  // When set, each task appends its trained batches' sample indices to
  // <dir>/<job>-a<attempt>-r<rank>.trace (see TrainContext::sample_trace).
  std::string sample_trace_dir;
  // When set, rewritten after every answered heartbeat with
  // "<unix ms> <worker id> <state>" (health_file.h).
  std::string health_file;
  // Rank 0 streams each checkpoint to the coordinator (a model snapshot)
  // before reporting it committed; restarts then fetch it from there.
  bool upload_snapshots = true;
};

class Agent {
 public:
  Agent(std::shared_ptr<v1::WorkerService::StubInterface> stub,
        AgentOptions options);
  ~Agent();

  // Runs until Stop(); returns the reason it stopped.
  absl::Status Run();
  void Stop();

 private:
  struct Task;
  // Registers (with `resume`, the running task, when set); *resumed tells
  // whether the coordinator re-adopted that task.
  absl::Status Register(const Task* resume = nullptr, bool* resumed = nullptr);
  void Beat();
  void WriteHealth(const char* state);
  void StartTask(const v1::Assignment& assignment);
  void RunTask(Task* task);
  // Reports the task's buffered metrics; on a retryable error keeps them
  // for the next call. OK when nothing is left to report.
  absl::Status FlushMetrics(Task* task);
  // The checkpoint file of `commit` to the coordinator (rank 0).
  absl::Status UploadSnapshot(Task* task, const v1::CheckpointCommit& commit);
  // The snapshot the assignment resumes from, checksum verified.
  absl::StatusOr<std::vector<char>> DownloadSnapshot(Task* task);
  // `call` until it succeeds, fails for good, the task is cancelled or
  // kRetryFor passes, with backoff; logs once.
  absl::Status Retry(Task* task, const std::string& what,
                     const std::function<absl::Status()>& call);

  static constexpr absl::Duration kRetryFor = absl::Minutes(2);

  std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const AgentOptions options_;
  // This registration (written by Register on the Run thread only; a task
  // keeps its own copy).
  std::string worker_id_;
  std::string worker_key_;
  int beats_failed_ = 0;  // in a row (Run thread only)
  absl::Duration interval_ = absl::Seconds(1);
  absl::Notification stop_;
  absl::Mutex mu_;
  std::unique_ptr<Task> task_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
