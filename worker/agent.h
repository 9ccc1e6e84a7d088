// Agent: the worker process's loop (`gradsync-worker`). Registers with the
// coordinator, heartbeats, runs the task it is assigned (rank r of W) on a
// task thread with the Trainer over a gloo communicator bootstrapped through
// the coordinator's store, reports metrics in batches, completes the task
// and returns to idle; one agent runs many jobs one after another.
//
// It sets the torchrun environment names (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT) for the task and logs them.
//
// Thread safety: Run() on one thread; Stop() from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

struct AgentOptions {
  std::string host = "127.0.0.1";  // address peers and logs use
  std::vector<int> free_ports;     // offered for MASTER_PORT
  int log_every = 50;              // steps between progress log lines
  // When set, each task appends its trained batches' sample indices to
  // <dir>/<job>-a<attempt>-r<rank>.trace (see TrainContext::sample_trace).
  std::string sample_trace_dir;
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
  absl::Status Register();
  void Beat();
  void StartTask(const v1::Assignment& assignment);
  void RunTask(Task* task);
  void FlushMetrics(Task* task);

  std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const AgentOptions options_;
  // This registration (written by Register on the Run thread only; a task
  // keeps its own copy).
  std::string worker_id_;
  std::string worker_key_;
  absl::Duration interval_ = absl::Seconds(1);
  absl::Notification stop_;
  std::mutex mu_;
  std::unique_ptr<Task> task_;  // guarded by mu_
};

}  // namespace gradsync
