#include "worker/agent/agent.h"

#include <grpcpp/grpcpp.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/client/remote_store.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"
#include "coordinator/wire/snapshot_stream.h"
#include "worker/agent/health_file.h"
#include "worker/agent/metrics_buffer.h"
#include "worker/agent/task_convert.h"
#include "worker/comm/communicator.h"
#include "worker/comm/devices.h"
#include "worker/model/checkpoint.h"
#include "worker/train/trainer.h"

namespace gradsync {

struct Agent::Task {
  v1::Assignment assignment;
  // The registration the task was assigned to; its calls act as this worker.
  std::string worker_id;
  std::string worker_key;
  // The TaskRef every call for this task carries.
  v1::TaskRef Ref() const {
    v1::TaskRef ref;
    ref.set_worker_id(worker_id);
    ref.set_job_id(assignment.job_id());
    ref.set_attempt(assignment.attempt());
    ref.set_rank(assignment.rank());
    return ref;
  }
  std::atomic<bool> cancel{false};
  std::atomic<bool> done{false};
  std::atomic<int64_t> step{0};
  std::atomic<int> epoch{0};
  // Owned here rather than by RunTask, so the heartbeat thread may read its
  // sequence until the task object itself is destroyed (after join).
  std::unique_ptr<Communicator> comm_owned;
  std::atomic<Communicator*> comm{nullptr};
  MetricsBuffer metrics;             // not yet reported
  bool metrics_failing = false;      // flusher thread only
  std::atomic<double> accuracy{-1};  // last evaluation (rank 0)
  std::thread thread;
};

namespace {

// A call context with a deadline, sending the worker key once registered.
std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration timeout,
                                         const std::string& worker_key) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!worker_key.empty()) ctx->AddMetadata(kWorkerKeyHeader, worker_key);
  return ctx;
}

void Log(const std::string& line) {
  std::fprintf(stderr, "gradsync-worker: %s\n", line.c_str());
}

}  // namespace

Agent::Agent(std::shared_ptr<v1::WorkerService::StubInterface> stub,
             AgentOptions options)
    : stub_(std::move(stub)), options_(std::move(options)) {}

Agent::~Agent() {
  Stop();
  absl::MutexLock lock(&mu_);
  if (task_ && task_->thread.joinable()) task_->thread.join();
}

void Agent::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  absl::MutexLock lock(&mu_);
  if (task_) task_->cancel = true;
}

absl::Status Agent::Register(const Task* resume, bool* resumed) {
  v1::RegisterWorkerRequest request;
  request.set_host(options_.host);
  if (resume != nullptr) {
    v1::ResumeTask* r = request.mutable_resume();
    *r->mutable_task() = resume->Ref();
    r->set_worker_key(resume->worker_key);
  }
  for (int p : options_.free_ports) request.add_free_ports(p);
  for (const CudaDevice& d : DiscoverDevices().cuda) {
    v1::Device* device = request.add_devices();
    device->set_kind("cuda");
    device->set_index(d.index);
    device->set_name(d.name);
    device->set_memory_bytes(d.memory_bytes);
  }
  absl::Duration backoff = absl::Milliseconds(200);
  while (!stop_.HasBeenNotified()) {
    v1::RegisterWorkerResponse response;
    const absl::Status s = FromGrpcStatus(stub_->RegisterWorker(
        Ctx(absl::Seconds(10), "").get(), request, &response));
    if (s.ok()) {
      worker_id_ = response.worker_id();
      worker_key_ = response.worker_key();
      interval_ = absl::Milliseconds(response.heartbeat_interval_ms());
      if (resumed != nullptr) *resumed = response.resumed();
      Log(absl::StrCat(
          response.resumed() ? "re-registered as " : "registered as ",
          worker_id_, " (host ", options_.host, ")",
          response.resumed()
              ? absl::StrCat(", still running ", resume->assignment.job_id(),
                             " rank ", resume->assignment.rank())
              : ""));
      return absl::OkStatus();
    }
    if (absl::IsInvalidArgument(s) || absl::IsUnauthenticated(s)) {
      // Retrying cannot help: a bad request, or the token is wrong or
      // missing.
      return s;
    }
    Log(absl::StrCat("cannot register (", s.message(), "); retrying in ",
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
  while (!stop_.WaitForNotificationWithTimeout(interval_)) Beat();
  return absl::OkStatus();
}

void Agent::Beat() {
  v1::HeartbeatRequest request;
  request.mutable_task()->set_worker_id(worker_id_);
  Task* task = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (task_ && task_->done) {
      task_->thread.join();
      task_.reset();
    }
    task = task_.get();
  }
  if (task != nullptr) {
    request.set_state(v1::WORKER_STATE_RUNNING);
    *request.mutable_task() = task->Ref();
    // As this registration (a task not re-adopted keeps its old id).
    request.mutable_task()->set_worker_id(worker_id_);
    request.set_step(task->step);
    request.set_epoch(task->epoch);
    if (Communicator* c = task->comm.load()) {
      request.set_collective_seq(c->sequence());
    }
  } else {
    request.set_state(v1::WORKER_STATE_IDLE);
  }
  v1::HeartbeatResponse response;
  const absl::Status s = FromGrpcStatus(stub_->Heartbeat(
      Ctx(absl::Seconds(5), worker_key_).get(), request, &response));
  if (absl::IsNotFound(s)) {
    Log(absl::StrCat("coordinator no longer knows ", worker_id_, ": ",
                     s.message(), "; registering again"));
    const bool running = task != nullptr && !task->cancel;
    bool resumed = false;
    (void)Register(running ? task : nullptr, &resumed);
    if (running && !resumed) {
      Log(absl::StrCat("the coordinator did not re-adopt ",
                       task->assignment.job_id(), " rank ",
                       task->assignment.rank(), "; abandoning it"));
      task->cancel = true;
    }
    return;
  }
  if (!s.ok()) {
    if (beats_failed_++ == 0) {  // once per outage
      Log(absl::StrCat("heartbeat failed: ", s.message(),
                       "; training goes on, heartbeats continue"));
    }
    return;
  }
  if (beats_failed_ > 0) {
    Log(absl::StrCat("heartbeats back after ", beats_failed_, " failed"));
    beats_failed_ = 0;
  }
  WriteHealth(task != nullptr ? "running" : "idle");
  if (response.action() == v1::ACTION_RUN && task == nullptr) {
    StartTask(response.assignment());
  } else if (response.action() == v1::ACTION_STOP && task != nullptr &&
             !task->cancel) {
    Log(absl::StrCat("stopping ", task->assignment.job_id(), ": ",
                     response.reason()));
    task->cancel = true;
  }
}

void Agent::StartTask(const v1::Assignment& a) {
  // torchrun's names, for what the task runs and for the logs.
  setenv("RANK", absl::StrCat(a.rank()).c_str(), 1);
  setenv("WORLD_SIZE", absl::StrCat(a.world_size()).c_str(), 1);
  setenv("LOCAL_RANK", absl::StrCat(a.local_rank()).c_str(), 1);
  setenv("MASTER_ADDR", a.master_addr().c_str(), 1);
  setenv("MASTER_PORT", absl::StrCat(a.master_port()).c_str(), 1);
  Log(absl::StrFormat(
      "job %s attempt %d: RANK=%d WORLD_SIZE=%d LOCAL_RANK=%d MASTER_ADDR=%s "
      "MASTER_PORT=%d model=%s",
      a.job_id(), a.attempt(), a.rank(), a.world_size(), a.local_rank(),
      a.master_addr(), a.master_port(), a.spec().model()));
  absl::MutexLock lock(&mu_);
  task_ = std::make_unique<Task>();
  task_->assignment = a;
  task_->worker_id = worker_id_;
  task_->worker_key = worker_key_;
  Task* task = task_.get();
  task_->thread = std::thread([this, task] { RunTask(task); });
}

namespace {

// Errors after which a call is worth repeating: the coordinator is away or
// restarting (and does not know this worker until it re-registers).
bool Retryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ||
         absl::IsNotFound(s);
}

}  // namespace

absl::Status Agent::Retry(Task* task, const std::string& what,
                          const std::function<absl::Status()>& call) {
  const absl::Time give_up = absl::Now() + kRetryFor;
  absl::Duration backoff = absl::Milliseconds(200);
  absl::Status s = call();
  bool logged = false;
  while (Retryable(s) && !task->cancel && absl::Now() < give_up &&
         !stop_.HasBeenNotified()) {
    if (!logged) {
      Log(absl::StrCat(what, ": ", s.message(), "; retrying for up to ",
                       absl::FormatDuration(kRetryFor)));
      logged = true;
    }
    stop_.WaitForNotificationWithTimeout(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
    s = call();
  }
  if (logged && s.ok()) Log(absl::StrCat(what, ": done after retrying"));
  return s;
}

absl::Status Agent::FlushMetrics(Task* task) {
  v1::ReportMetricsRequest request;
  if (!task->metrics.TakeInto(&request)) return absl::OkStatus();
  *request.mutable_task() = task->Ref();
  v1::ReportMetricsResponse response;
  const absl::Status s = FromGrpcStatus(stub_->ReportMetrics(
      Ctx(absl::Seconds(10), task->worker_key).get(), request, &response));
  if (s.ok()) {
    task->metrics_failing = false;
    return s;
  }
  if (!task->metrics_failing) {
    Log(absl::StrCat("metrics not reported: ", s.message(),
                     Retryable(s) ? " (kept; will retry)" : ""));
    task->metrics_failing = true;
  }
  if (!Retryable(s)) return s;      // the attempt is over
  task->metrics.PutBack(&request);  // oldest first, for the next flush
  return s;
}

absl::Status Agent::UploadSnapshot(Task* task,
                                   const v1::CheckpointCommit& commit) {
  auto ctx = Ctx(absl::Minutes(5), task->worker_key);
  v1::SnapshotMeta stored;
  auto writer = stub_->UploadSnapshot(ctx.get(), &stored);
  v1::SnapshotMeta meta;
  meta.set_job_id(task->assignment.job_id());
  meta.set_step(commit.step());
  meta.set_epoch(commit.epoch());
  meta.set_accuracy(task->accuracy);
  absl::Status sent = WriteSnapshotFile(
      commit.path(), meta, task->worker_id, task->assignment.attempt(),
      [&](const v1::SnapshotChunk& chunk) { return writer->Write(chunk); });
  if (!sent.ok() && !absl::IsCancelled(sent)) {
    ctx->TryCancel();  // the coordinator keeps nothing of it
    (void)writer->Finish();
    return sent;
  }
  // A failed write ended the stream; Finish() says why.
  writer->WritesDone();
  return FromGrpcStatus(writer->Finish());
}

absl::StatusOr<std::vector<char>> Agent::DownloadSnapshot(Task* task) {
  const v1::Assignment& a = task->assignment;
  v1::PullSnapshotRequest request;
  request.set_worker_id(task->worker_id);
  request.set_job_id(a.job_id());
  request.set_attempt(a.attempt());
  request.set_step(a.resume_snapshot_step());
  request.set_snapshot_job_id(a.resume_snapshot_job());
  request.set_has_step(true);
  std::string data;
  v1::SnapshotMeta meta;
  absl::Status status = Retry(task, "download snapshot", [&] {
    auto ctx = Ctx(absl::Minutes(5), task->worker_key);
    auto reader = stub_->DownloadSnapshot(ctx.get(), request);
    return ReadSnapshotChunks(*ctx, *reader, &meta, &data);
  });
  if (!status.ok()) {
    return absl::Status(
        status.code(),
        absl::StrCat("download snapshot of step ", a.resume_snapshot_step(),
                     ": ", status.message()));
  }
  Log(absl::StrFormat(
      "%s resumes from the coordinator's snapshot of %s step "
      "%d (%.1f MB)",
      a.job_id(), meta.job_id(), meta.step(), data.size() / 1e6));
  return std::vector<char>(data.begin(), data.end());
}

void Agent::RunTask(Task* task) {
  const v1::Assignment& a = task->assignment;
  const v1::JobSpec& spec = a.spec();
  torch::set_num_threads(1);
  absl::Status status;
  TrainResult result;
  // A flusher reports batched metrics twice a second while training.
  absl::Notification flusher_stop;
  std::thread flusher([&] {
    while (
        !flusher_stop.WaitForNotificationWithTimeout(absl::Milliseconds(500))) {
      (void)FlushMetrics(task);
    }
  });
  int cuda_device = 0;
  {
    CommOptions co;
    co.rank = a.rank();
    co.size = a.world_size();
    co.store =
        std::make_shared<RemoteStore>(stub_, task->Ref(), task->worker_key);
    co.timeout = absl::Milliseconds(spec.collective_timeout_ms());
    co.hostname = options_.host;
    const Backend backend = ToBackend(a.backend());
    if (backend == Backend::kNccl) {
      // One GPU per rank: local ranks take this host's GPUs in turn.
      const int gpus = static_cast<int>(DiscoverDevices().cuda.size());
      cuda_device = gpus > 0 ? a.local_rank() % gpus : 0;
    }
    co.cuda_device = cuda_device;
    absl::StatusOr<std::unique_ptr<Communicator>> created =
        CreateCommunicator(backend, co);
    if (!created.ok()) {
      status = created.status();
    } else {
      task->comm_owned = std::move(*created);
      task->comm = task->comm_owned.get();
    }
  }
  if (status.ok()) {
    TrainContext c;
    c.spec = ToTrainSpec(spec);
    c.rank = a.rank();
    c.world_size = a.world_size();
    c.train_samples = a.train_samples();
    c.eval_samples = a.eval_samples();
    c.comm = task->comm_owned.get();
    c.cuda_device = cuda_device;
    c.cancel = &task->cancel;
    c.resume_remaining = a.resume_remaining();
    if (!options_.sample_trace_dir.empty()) {
      c.sample_trace =
          absl::StrFormat("%s/%s-a%d-r%d.trace", options_.sample_trace_dir,
                          a.job_id(), a.attempt(), a.rank());
    }
    c.step = &task->step;
    c.epoch = &task->epoch;
    c.metadata = {{"RANK", absl::StrCat(a.rank())},
                  {"WORLD_SIZE", absl::StrCat(a.world_size())},
                  {"LOCAL_RANK", absl::StrCat(a.local_rank())},
                  {"MASTER_ADDR", a.master_addr()},
                  {"MASTER_PORT", absl::StrCat(a.master_port())},
                  {"job_id", a.job_id()},
                  {"attempt", absl::StrCat(a.attempt())},
                  {"host", options_.host}};
    c.shard = [this, task](int epoch,
                           bool eval) -> absl::StatusOr<std::vector<int64_t>> {
      v1::GetShardRequest request;
      *request.mutable_task() = task->Ref();
      request.set_epoch(epoch);
      request.set_split(eval ? v1::SHARD_SPLIT_EVAL : v1::SHARD_SPLIT_TRAIN);
      v1::GetShardResponse response;
      absl::Status s = Retry(task, "get shard", [&] {
        return FromGrpcStatus(
            stub_->GetShard(Ctx(absl::Seconds(30), task->worker_key).get(),
                            request, &response));
      });
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("get shard: ", s.message()));
      }
      return std::vector<int64_t>(response.indices().begin(),
                                  response.indices().end());
    };
    const int log_every = options_.log_every;
    c.on_step = [task, log_every](const StepReport& m) {
      if (log_every > 0 && m.step % log_every == 0) {
        Log(absl::StrFormat(
            "%s rank %d epoch %d step %d/%d loss %.4f %.0f samples/s (data "
            "%.1f ms, compute %.1f ms, all-reduce %.1f ms exposed)",
            task->assignment.job_id(), m.rank, m.epoch + 1,
            m.step - int64_t{m.epoch} * m.steps_per_epoch, m.steps_per_epoch,
            m.loss, m.samples_per_sec, m.data_wait_ms, m.compute_ms,
            m.allreduce_ms));
      }
      task->metrics.Add(ToProto(m));
    };
    c.on_checkpoint = [this, task](const CheckpointReport& report) {
      v1::CheckpointCommit commit = ToProto(report);
      // The commit is reported after the upload, so a restart on another
      // host finds at the coordinator what the ledger says is committed.
      if (options_.upload_snapshots) {
        absl::Status up = UploadSnapshot(task, commit);
        commit.set_uploaded(up.ok());
        if (!up.ok()) {
          Log(absl::StrCat(
              "snapshot of step ", commit.step(),
              " not uploaded (restarts need the file path): ", up.ToString()));
        }
      }
      Log(absl::StrFormat(
          "%s checkpoint %s%s commits through epoch %d batch %d (step %d)",
          task->assignment.job_id(), commit.path(),
          commit.uploaded() ? " (uploaded)" : "", commit.epoch() + 1,
          commit.epoch_batch(), commit.step()));
      task->metrics.Add(commit);
    };
    if (a.has_resume_snapshot()) {
      c.read_resume = [this, task]() { return DownloadSnapshot(task); };
    }
    c.on_eval = [task](const EvalReport& e) {
      task->accuracy = e.accuracy;
      Log(absl::StrFormat("%s epoch %d: test accuracy %.2f%% (%d samples)",
                          task->assignment.job_id(), e.epoch + 1,
                          100 * e.accuracy, e.samples));
      task->metrics.Add(ToProto(e));
    };
    auto trained = Train(c);
    if (trained.ok()) {
      result = *trained;
    } else {
      status = trained.status();
    }
  }
  flusher_stop.Notify();
  flusher.join();
  // Every buffered metric reaches the coordinator before the completion.
  (void)Retry(task, "report metrics", [&] { return FlushMetrics(task); });
  if (!task->cancel) {
    v1::CompleteTaskRequest request;
    *request.mutable_task() = task->Ref();
    request.set_success(status.ok());
    request.set_message(
        status.ok() ? absl::StrFormat("%d steps%s", result.steps,
                                      result.checkpoint.empty()
                                          ? ""
                                          : ", checkpoint " + result.checkpoint)
                    : status.ToString());
    v1::CompleteTaskResponse response;
    absl::Status s = Retry(task, "complete task", [&] {
      return FromGrpcStatus(stub_->CompleteTask(
          Ctx(absl::Seconds(10), task->worker_key).get(), request, &response));
    });
    if (!s.ok()) Log(absl::StrCat("complete task: ", s.message()));
  }
  Log(absl::StrCat("job ", a.job_id(), " rank ", a.rank(), " finished: ",
                   task->cancel  ? "cancelled"
                   : status.ok() ? "ok"
                                 : status.ToString()));
  task->done = true;
}

}  // namespace gradsync
