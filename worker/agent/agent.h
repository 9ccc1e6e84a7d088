// Agent: the worker process's loop (`gradsync-worker`). Registers with the
// coordinator, heartbeats (writing the health file), starts the task it is
// assigned (rank r of W; task.h runs it on a thread of its own), stops it
// when told to, and returns to idle; one agent runs many jobs one after
// another.
//
// A worker that lives for one job (AgentOptions::job_id, exit_after_job)
// leaves Run() when the coordinator says that job has ended: OK when it
// SUCCEEDED, ABORTED naming its state and reason otherwise, NOT_FOUND when
// the job does not exist; DEADLINE_EXCEEDED when no task came within
// AgentOptions::idle_timeout.
//
// It sets the torchrun environment names (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT) for the task and logs them.
//
// The task outlives the coordinator: while the coordinator is unreachable
// training goes on, metrics are buffered, and shard requests and the task's
// completion are retried with backoff (up to Task::kRetryFor); when a restarted
// coordinator no longer knows the worker, it registers again with its task
// and carries on if the coordinator re-adopts it (abandons the task if not).
//
// Thread safety: Run() on one thread; Stop() from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gradsync/v1/worker_service.grpc.pb.h"
#include "worker/agent/agent_options.h"
#include "worker/agent/task.h"

namespace gradsync {

class Agent {
 public:
  Agent(std::shared_ptr<v1::WorkerService::StubInterface> stub,
        AgentOptions options);
  ~Agent();

  // Runs until Stop() (OK) or, for a worker that lives for one job, until
  // that job has ended; returns the reason it stopped.
  absl::Status Run();
  void Stop();

 private:
  // Registers (with `resume`, the running task, when set); *resumed tells
  // whether the coordinator re-adopted that task.
  absl::Status Register(const Task* resume = nullptr, bool* resumed = nullptr);
  void Beat();
  // Tells the coordinator this worker is gone (best effort, a short
  // deadline): its task's attempt fails now, not a heartbeat timeout later.
  void Leave(const std::string& reason);
  void WriteHealth(const char* state);
  void StartTask(const v1::Assignment& assignment);
  bool LivesForOneJob() const {
    return options_.exit_after_job || !options_.job_id.empty();
  }

  std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const AgentOptions options_;
  // This registration (written by Register on the Run thread only; a task
  // keeps its own copy).
  std::string worker_id_;
  std::string worker_key_;
  int beats_failed_ = 0;  // in a row (Run thread only)
  absl::Duration interval_ = absl::Seconds(1);
  // A worker that lives for one job (Run thread only): the job, from its
  // first assignment (empty: none yet, which the idle timeout counts), and
  // why Run returns, once the coordinator has said EXIT.
  std::string lives_for_;
  std::optional<absl::Status> exit_;
  absl::Notification stop_;
  absl::Mutex mu_;
  std::unique_ptr<Task> task_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
