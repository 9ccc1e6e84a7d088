// Test helpers: a real coordinator server on port 0 with stubs, a tiny
// image-folder data set on disk, and SimWorker, a worker agent driven by the
// test (register, heartbeat until assigned, join, complete).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "coordinator/server/server.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync::testing {

// Creates <dir>/train/<c>/<i>.png (train_per_class files per class) and
// <dir>/test/<c>/<i>.png (test_per_class), with two classes.
void MakeImageFolder(const std::string& dir, int train_per_class,
                     int test_per_class);
std::string UniqueTempDir(const std::string& tag);

class TestCluster {
 public:
  // heartbeat_timeout: when silent workers are declared dead.
  // max_waiting_calls: ServerOptions' (0: its default).
  explicit TestCluster(absl::Duration heartbeat_timeout = absl::Seconds(30),
                       std::string state_dir = "", int max_waiting_calls = 0);
  ~TestCluster();

  // Stops the server (for restart tests); a new TestCluster may reuse the
  // state directory afterwards.
  void Stop();

  v1::JobService::Stub& jobs() { return *jobs_; }
  v1::WorkerService::Stub& workers() { return *workers_; }
  std::shared_ptr<v1::JobService::Stub> job_stub() { return jobs_; }
  const std::string& address() const { return address_; }
  const std::string& dataset() const { return dataset_; }
  CoordinatorServer& server() { return *server_; }

  // A valid spec over dataset() for `workers` ranks.
  v1::JobSpec Spec(int workers) const;
  // Submits and returns the job (fails the test on error).
  v1::Job Submit(const v1::JobSpec& spec);
  v1::Job Get(const std::string& job_id);
  // Reads WatchJob until the job reaches `state` or the stream ends;
  // returns the last Job seen.
  v1::Job WaitForState(const std::string& job_id, v1::JobState state);

 private:
  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
  std::string dataset_;
  std::shared_ptr<v1::JobService::Stub> jobs_;
  std::unique_ptr<v1::WorkerService::Stub> workers_;
};

// Client context with a deadline of `seconds`.
std::unique_ptr<grpc::ClientContext> Ctx(double seconds = 10);

class SimWorker {
 public:
  // Registers with `gpus` CUDA devices (0 = a CPU-only worker), sent
  // without UUIDs.
  SimWorker(v1::WorkerService::Stub& stub, std::string host, int gpus = 0);
  // Registers with one CUDA device per UUID, in this order.
  SimWorker(v1::WorkerService::Stub& stub, std::string host,
            const std::vector<std::string>& gpu_uuids);

  // Registers with `request` as it is (a CPU-only worker unless it names
  // devices); `status` gets the answer (else a failed registration fails
  // the test).
  SimWorker(v1::WorkerService::Stub& stub, v1::RegisterWorkerRequest request,
            grpc::Status* status = nullptr);

  const std::string& id() const { return id_; }
  const std::string& key() const { return key_; }
  // A call context (deadline `seconds`) carrying this worker's key.
  std::unique_ptr<grpc::ClientContext> Context(double seconds = 10) const;
  // One heartbeat carrying the worker's current task (if any).
  grpc::Status Heartbeat(v1::HeartbeatResponse* response);
  // Heartbeats until the coordinator answers RUN (at most `max_beats`,
  // `pause` apart), then adopts the assignment and acknowledges it with
  // state RUNNING.
  v1::Assignment AwaitAssignment(int max_beats = 2000,
                                 absl::Duration pause = absl::ZeroDuration());
  // Reports the task done and drops it.
  grpc::Status Complete(bool success, const std::string& message = "");
  // The collective sequence number its heartbeats report.
  void set_collective_seq(int64_t seq) { collective_seq_ = seq; }
  // Drops the task locally (as after a STOP).
  void DropTask() { task_.reset(); }
  const v1::Assignment* task() const { return task_.get(); }

 private:
  void Register(std::string host, const std::vector<std::string>& gpu_uuids,
                int gpus);
  grpc::Status Register(const v1::RegisterWorkerRequest& request);

  v1::WorkerService::Stub& stub_;
  std::string id_;
  std::string key_;
  std::unique_ptr<v1::Assignment> task_;
  int64_t step_ = 0;
  int64_t collective_seq_ = 0;
};

// A coordinator with two simulated CPU workers on one host, registered in
// order (w0 first): where most control-plane tests start.
class TwoWorkerTest : public ::testing::Test {
 protected:
  TestCluster c;
  SimWorker w0{c.workers(), "host-a"};
  SimWorker w1{c.workers(), "host-a"};
};

}  // namespace gradsync::testing
