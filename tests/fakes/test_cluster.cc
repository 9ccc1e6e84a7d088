#include "tests/fakes/test_cluster.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/server/auth.h"
#include "coordinator/wire/secrets.h"

namespace gradsync::testing {
namespace fs = std::filesystem;

std::string UniqueTempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  fs::path dir =
      fs::temp_directory_path() /
      absl::StrCat("gradsync_", tag, "_", ::getpid(), "_", counter++);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void MakeImageFolder(const std::string& dir, int train_per_class,
                     int test_per_class) {
  for (const char* cls : {"class_a", "class_b"}) {
    for (auto [split, n] :
         {std::pair<const char*, int>{"train", train_per_class},
          {"test", test_per_class}}) {
      fs::path d = fs::path(dir) / split / cls;
      fs::create_directories(d);
      for (int i = 0; i < n; ++i) {
        std::ofstream(d / absl::StrCat(i, ".png")) << "png";
      }
    }
  }
}

std::unique_ptr<grpc::ClientContext> Ctx(double seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  return ctx;
}

TestCluster::TestCluster(absl::Duration heartbeat_timeout,
                         std::string state_dir, int max_waiting_calls) {
  ServerOptions options;
  if (max_waiting_calls > 0) options.max_waiting_calls = max_waiting_calls;
  options.address = "127.0.0.1:0";
  options.state_dir = std::move(state_dir);
  options.coordinator.heartbeat_timeout = heartbeat_timeout;
  options.coordinator.reconnect_grace = heartbeat_timeout;
  options.coordinator.heartbeat_interval =
      std::min(heartbeat_timeout / 4, absl::Seconds(1));
  auto server = CoordinatorServer::Start(options);
  if (!server.ok()) {
    ADD_FAILURE() << server.status();
    return;
  }
  server_ = std::move(*server);
  address_ = absl::StrCat("127.0.0.1:", server_->port());
  auto channel =
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  jobs_ = v1::JobService::NewStub(channel);
  workers_ = v1::WorkerService::NewStub(channel);
  dataset_ = UniqueTempDir("data");
  MakeImageFolder(dataset_, 5, 3);  // 10 train, 6 test samples
}

TestCluster::~TestCluster() {
  Stop();
  if (!dataset_.empty()) fs::remove_all(dataset_);
}

void TestCluster::Stop() {
  if (server_) server_->Shutdown();
  server_.reset();
}

v1::JobSpec TestCluster::Spec(int workers) const {
  v1::JobSpec spec;
  spec.set_name("test");
  spec.mutable_dataset()->set_path(dataset_);
  spec.mutable_dataset()->set_eval_split("test");
  spec.set_model("fashion_cnn");
  spec.set_batch_size(2);
  spec.mutable_world_size()->set_max_workers(workers);
  return spec;
}

v1::Job TestCluster::Submit(const v1::JobSpec& spec) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  v1::Job job;
  grpc::Status s = jobs_->SubmitJob(Ctx().get(), request, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

v1::Job TestCluster::Get(const std::string& job_id) {
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  grpc::Status s = jobs_->GetJob(Ctx().get(), request, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

v1::Job TestCluster::WaitForState(const std::string& job_id,
                                  v1::JobState state) {
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  auto ctx = Ctx(60);
  auto reader = jobs_->WatchJob(ctx.get(), request);
  v1::JobEvent event;
  v1::Job last;
  while (reader->Read(&event)) {
    if (!event.has_job()) continue;
    last = event.job();
    if (last.state() == state) {
      ctx->TryCancel();
      break;
    }
  }
  reader->Finish().ok();
  return last;
}

SimWorker::SimWorker(v1::WorkerService::Stub& stub, std::string host, int gpus)
    : stub_(stub) {
  Register(std::move(host), {}, gpus);
}

SimWorker::SimWorker(v1::WorkerService::Stub& stub, std::string host,
                     const std::vector<std::string>& gpu_uuids)
    : stub_(stub) {
  Register(std::move(host), gpu_uuids, static_cast<int>(gpu_uuids.size()));
}

void SimWorker::Register(std::string host,
                         const std::vector<std::string>& gpu_uuids, int gpus) {
  v1::RegisterWorkerRequest request;
  request.set_host(std::move(host));
  for (int i = 0; i < gpus; ++i) {
    v1::Device* d = request.add_devices();
    d->set_kind("cuda");
    d->set_index(i);
    d->set_name("simulated GPU");
    if (!gpu_uuids.empty()) d->set_uuid(gpu_uuids[i]);
  }
  grpc::Status s = Register(request);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

SimWorker::SimWorker(v1::WorkerService::Stub& stub,
                     v1::RegisterWorkerRequest request, grpc::Status* status)
    : stub_(stub) {
  grpc::Status s = Register(request);
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
}

grpc::Status SimWorker::Register(const v1::RegisterWorkerRequest& request) {
  v1::RegisterWorkerResponse response;
  grpc::Status s = stub_.RegisterWorker(Ctx().get(), request, &response);
  id_ = response.worker_id();
  key_ = response.worker_key();
  return s;
}

std::unique_ptr<grpc::ClientContext> SimWorker::Context(double seconds) const {
  std::unique_ptr<grpc::ClientContext> ctx = Ctx(seconds);
  ctx->AddMetadata(kWorkerKeyHeader, key_);
  return ctx;
}

grpc::Status SimWorker::Heartbeat(v1::HeartbeatResponse* response) {
  v1::HeartbeatRequest request;
  request.mutable_task()->set_worker_id(id_);
  request.set_state(task_ ? v1::WORKER_STATE_RUNNING : v1::WORKER_STATE_IDLE);
  if (task_) {
    request.mutable_task()->set_job_id(task_->job_id());
    request.mutable_task()->set_attempt(task_->attempt());
    request.mutable_task()->set_rank(task_->rank());
    request.set_step(++step_);
    request.set_collective_seq(collective_seq_);
  }
  return stub_.Heartbeat(Context().get(), request, response);
}

v1::Assignment SimWorker::AwaitAssignment(int max_beats, absl::Duration pause) {
  for (int i = 0; i < max_beats; ++i) {
    v1::HeartbeatResponse response;
    grpc::Status s = Heartbeat(&response);
    if (!s.ok()) {
      ADD_FAILURE() << "heartbeat: " << s.error_message();
      break;
    }
    if (response.action() == v1::ACTION_RUN) {
      task_ = std::make_unique<v1::Assignment>(response.assignment());
      // Acknowledge: the coordinator counts the rank as joined.
      EXPECT_TRUE(Heartbeat(&response).ok());
      EXPECT_EQ(response.action(), v1::ACTION_NONE);
      return *task_;
    }
    // Not assigned yet; yield before the next beat.
    if (pause > absl::ZeroDuration()) {
      absl::SleepFor(pause);
    } else {
      std::this_thread::yield();
    }
  }
  ADD_FAILURE() << "worker " << id_ << " got no assignment";
  return v1::Assignment();
}

grpc::Status SimWorker::Complete(bool success, const std::string& message) {
  v1::CompleteTaskRequest request;
  request.mutable_task()->set_worker_id(id_);
  request.mutable_task()->set_job_id(task_->job_id());
  request.mutable_task()->set_attempt(task_->attempt());
  request.mutable_task()->set_rank(task_->rank());
  request.set_success(success);
  request.set_message(message);
  v1::CompleteTaskResponse response;
  grpc::Status s = stub_.CompleteTask(Context().get(), request, &response);
  task_.reset();
  return s;
}

}  // namespace gradsync::testing
