#include "worker/agent/agent.h"

#include <grpcpp/grpcpp.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/wire/grpc_status.h"
#include "worker/agent/coordinator_call.h"
#include "worker/agent/health_file.h"
#include "worker/comm/devices.h"

namespace gradsync {

namespace {

// The checkpoint root as an absolute path: what the worker registers (the
// coordinator checks submitted paths against it) and what errors name.
AgentOptions WithAbsoluteRoot(AgentOptions options) {
  std::error_code ec;
  std::string root = std::filesystem::absolute(options.checkpoint_root, ec)
                         .lexically_normal()
                         .string();
  if (!ec) {
    if (root.size() > 1 && root.back() == '/') root.pop_back();
    options.checkpoint_root = std::move(root);
  }
  return options;
}

}  // namespace

Agent::Agent(std::shared_ptr<v1::WorkerService::StubInterface> stub,
             AgentOptions options)
    : stub_(std::move(stub)), options_(WithAbsoluteRoot(std::move(options))) {}

Agent::~Agent() {
  Stop();
  absl::MutexLock lock(&mu_);
  task_.reset();  // joins its thread
}

void Agent::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  absl::MutexLock lock(&mu_);
  if (task_) task_->Cancel();
}

absl::Status Agent::Register(const Task* resume, bool* resumed) {
  v1::RegisterWorkerRequest request;
  request.set_host(options_.host);
  if (resume != nullptr) {
    v1::ResumeTask* r = request.mutable_resume();
    *r->mutable_task() = resume->Ref();
    r->set_worker_key(resume->worker_key());
  }
  for (int p : options_.free_ports) request.add_free_ports(p);
  // Again after a coordinator restart: the job learned from the first
  // assignment stays this worker's only one.
  request.set_job_id(options_.job_id.empty() ? lives_for_ : options_.job_id);
  request.set_exit_after_job(LivesForOneJob());
  request.set_checkpoint_root(options_.checkpoint_root);
  request.set_libtorch_version(TORCH_VERSION);
  const std::vector<CudaDevice> gpus = DiscoverDevices().cuda;
  // A GPU counts only if this LibTorch can compute on it: a CPU-only
  // LibTorch next to a GPU registers as a CPU worker, so the scheduler
  // never gives it an nccl rank.
  const bool torch_cuda = torch::cuda::is_available();
  if (!gpus.empty() && !torch_cuda) {
    AgentLog(absl::StrCat("this host has ", gpus.size(),
                          " GPU(s) but this worker's LibTorch is CPU only; "
                          "registering as a CPU worker"));
  }
  for (const CudaDevice& d : torch_cuda ? gpus : std::vector<CudaDevice>{}) {
    v1::Device* device = request.add_devices();
    device->set_kind("cuda");
    device->set_index(d.index);
    device->set_name(d.name);
    device->set_memory_bytes(d.memory_bytes);
    device->set_uuid(d.uuid);
  }
  absl::Duration backoff = absl::Milliseconds(200);
  while (!stop_.HasBeenNotified()) {
    v1::RegisterWorkerResponse response;
    const absl::Status s = FromGrpcStatus(stub_->RegisterWorker(
        CallContext(absl::Seconds(10), "").get(), request, &response));
    if (s.ok()) {
      worker_id_ = response.worker_id();
      worker_key_ = response.worker_key();
      interval_ = absl::Milliseconds(response.heartbeat_interval_ms());
      if (resumed != nullptr) *resumed = response.resumed();
      AgentLog(absl::StrCat(
          response.resumed() ? "re-registered as " : "registered as ",
          worker_id_, " (host ", options_.host, ")",
          response.resumed()
              ? absl::StrCat(", still running ", resume->assignment().job_id(),
                             " rank ", resume->assignment().rank())
              : ""));
      return absl::OkStatus();
    }
    if (absl::IsInvalidArgument(s) || absl::IsUnauthenticated(s) ||
        absl::IsNotFound(s)) {
      // Retrying cannot help: a bad request, the token is wrong or
      // missing, or the job this worker lives for does not exist.
      return s;
    }
    AgentLog(absl::StrCat("cannot register (", s.message(), "); retrying in ",
                          absl::FormatDuration(backoff)));
    stop_.WaitForNotificationWithTimeout(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
  return absl::CancelledError("stopped");
}

void Agent::WriteHealth(const char* state) {
  if (!options_.health_file.empty()) {
    WriteHealthFile(options_.health_file, worker_id_, state);
  }
}

absl::Status Agent::Run() {
  if (absl::Status s = Register(); !s.ok()) return s;
  const absl::Time registered = absl::Now();
  while (!stop_.WaitForNotificationWithTimeout(interval_)) {
    Beat();
    if (exit_.has_value()) {
      Leave("its job ended");
      return *exit_;
    }
    if (LivesForOneJob() && lives_for_.empty() &&
        absl::Now() - registered > options_.idle_timeout) {
      Leave("no task within --idle-timeout");
      return absl::DeadlineExceededError(
          absl::StrCat("no task was assigned within ",
                       absl::FormatDuration(options_.idle_timeout),
                       " (--idle-timeout); exiting"));
    }
  }
  Leave("stopped");
  return absl::OkStatus();
}

void Agent::Leave(const std::string& reason) {
  v1::DeregisterRequest request;
  request.mutable_task()->set_worker_id(worker_id_);
  request.set_reason(reason);
  v1::DeregisterResponse response;
  const absl::Status s = FromGrpcStatus(stub_->Deregister(
      CallContext(absl::Seconds(3), worker_key_).get(), request, &response));
  if (!s.ok() && !absl::IsNotFound(s)) {
    AgentLog(absl::StrCat("could not deregister (", s.message(),
                          "); the coordinator will declare this worker dead"));
  }
}

void Agent::Beat() {
  v1::HeartbeatRequest request;
  request.mutable_task()->set_worker_id(worker_id_);
  Task* task = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (task_ && task_->done()) task_.reset();  // joins its thread
    task = task_.get();
  }
  if (task != nullptr) {
    request.set_state(v1::WORKER_STATE_RUNNING);
    *request.mutable_task() = task->Ref();
    // As this registration (a task not re-adopted keeps its old id).
    request.mutable_task()->set_worker_id(worker_id_);
    request.set_step(task->step());
    request.set_epoch(task->epoch());
    request.set_collective_seq(task->collective_seq());
  } else {
    request.set_state(v1::WORKER_STATE_IDLE);
  }
  v1::HeartbeatResponse response;
  const absl::Status s = FromGrpcStatus(stub_->Heartbeat(
      CallContext(absl::Seconds(5), worker_key_).get(), request, &response));
  if (absl::IsNotFound(s)) {
    AgentLog(absl::StrCat("coordinator no longer knows ", worker_id_, ": ",
                          s.message(), "; registering again"));
    const bool running = task != nullptr && !task->cancelled();
    bool resumed = false;
    if (absl::Status r = Register(running ? task : nullptr, &resumed);
        !r.ok() && LivesForOneJob()) {
      exit_ = r;  // e.g. its job was deleted meanwhile
      return;
    }
    if (running && !resumed) {
      AgentLog(absl::StrCat("the coordinator did not re-adopt ",
                            task->assignment().job_id(), " rank ",
                            task->assignment().rank(), "; abandoning it"));
      task->Cancel();
    }
    return;
  }
  if (!s.ok()) {
    if (beats_failed_++ == 0) {  // once per outage
      AgentLog(absl::StrCat("heartbeat failed: ", s.message(),
                            "; training goes on, heartbeats continue"));
    }
    return;
  }
  if (beats_failed_ > 0) {
    AgentLog(absl::StrCat("heartbeats back after ", beats_failed_, " failed"));
    beats_failed_ = 0;
  }
  WriteHealth(task != nullptr ? "running" : "idle");
  if (response.action() == v1::ACTION_EXIT && task == nullptr) {
    AgentLog(absl::StrCat("exiting: ", response.reason()));
    exit_ = response.job_state() == v1::JOB_STATE_SUCCEEDED
                ? absl::OkStatus()
                : absl::AbortedError(response.reason());
    return;
  }
  if (response.action() == v1::ACTION_RUN && task == nullptr) {
    StartTask(response.assignment());
  } else if (response.action() == v1::ACTION_STOP && task != nullptr &&
             !task->cancelled()) {
    AgentLog(absl::StrCat("stopping ", task->assignment().job_id(), ": ",
                          response.reason()));
    task->Cancel();
  }
}

void Agent::StartTask(const v1::Assignment& a) {
  // torchrun's names, in the log and in the task's checkpoint metadata;
  // not in this process's environment: setenv races every other thread's
  // getenv (gRPC's, LibTorch's).
  AgentLog(absl::StrFormat(
      "job %s attempt %d: RANK=%d WORLD_SIZE=%d LOCAL_RANK=%d MASTER_ADDR=%s "
      "MASTER_PORT=%d model=%s",
      a.job_id(), a.attempt(), a.rank(), a.world_size(), a.local_rank(),
      a.master_addr(), a.master_port(), a.spec().model()));
  if (LivesForOneJob()) lives_for_ = a.job_id();
  absl::MutexLock lock(&mu_);
  task_ = std::make_unique<Task>(stub_, options_, a, worker_id_, worker_key_,
                                 stop_);
  task_->Start();
}

}  // namespace gradsync
