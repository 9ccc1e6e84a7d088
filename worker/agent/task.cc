#include "worker/agent/task.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/client/remote_store.h"
#include "coordinator/wire/file_chunks.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"
#include "coordinator/wire/snapshot_stream.h"
#include "foundation/files/confined_path.h"
#include "foundation/files/scratch_directory.h"
#include "worker/agent/coordinator_call.h"
#include "worker/agent/task_convert.h"
#include "worker/rank/rank_runner.h"
#include "worker/train/compute_threads.h"
#include "worker/train/step_deadline.h"

namespace gradsync {

Task::Task(std::shared_ptr<v1::WorkerService::StubInterface> stub,
           const AgentOptions& options, v1::Assignment assignment,
           std::string worker_id, std::string worker_key,
           const absl::Notification& agent_stop)
    : stub_(std::move(stub)),
      options_(options),
      assignment_(std::move(assignment)),
      worker_id_(std::move(worker_id)),
      worker_key_(std::move(worker_key)),
      agent_stop_(agent_stop) {}

Task::~Task() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void Task::Start() {
  thread_ = std::thread([this] { Run(); });
}

v1::TaskRef Task::Ref() const {
  v1::TaskRef ref;
  ref.set_worker_id(worker_id_);
  ref.set_job_id(assignment_.job_id());
  ref.set_attempt(assignment_.attempt());
  ref.set_rank(assignment_.rank());
  return ref;
}

void Task::Cancel() {
  cancel_ = true;
  // comm_owned_ keeps it alive until this task is destroyed, on the
  // agent's thread, as this call is.
  if (Communicator* c = comm_.load()) c->Abort();
}

int64_t Task::collective_seq() const {
  const Communicator* c = comm_.load();
  return c == nullptr ? 0 : c->sequence();
}

namespace {

// Errors after which a call is worth repeating: the coordinator is away or
// restarting (and does not know this worker until it re-registers).
bool Retryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) ||
         absl::IsNotFound(s);
}

}  // namespace

absl::Status Task::Retry(const std::string& what,
                         const std::function<absl::Status()>& call) {
  const absl::Time give_up = absl::Now() + kRetryFor;
  absl::Duration backoff = absl::Milliseconds(200);
  absl::Status s = call();
  bool logged = false;
  while (Retryable(s) && !cancel_ && absl::Now() < give_up &&
         !agent_stop_.HasBeenNotified()) {
    if (!logged) {
      Log(absl::StrCat(what, ": ", s.message(), "; retrying for up to ",
                       absl::FormatDuration(kRetryFor)));
      logged = true;
    }
    agent_stop_.WaitForNotificationWithTimeout(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
    s = call();
  }
  if (logged && s.ok()) Log(absl::StrCat(what, ": done after retrying"));
  return s;
}

absl::Status Task::FlushMetrics() {
  v1::ReportMetricsRequest request;
  if (!metrics_.TakeInto(&request)) return absl::OkStatus();
  *request.mutable_task() = Ref();
  v1::ReportMetricsResponse response;
  const absl::Status s = FromGrpcStatus(stub_->ReportMetrics(
      CallContext(absl::Seconds(10), worker_key_).get(), request, &response));
  if (s.ok()) {
    metrics_failing_ = false;
    return s;
  }
  if (!metrics_failing_) {
    Log(absl::StrCat("metrics not reported: ", s.message(),
                     Retryable(s) ? " (kept; will retry)" : ""));
    metrics_failing_ = true;
  }
  if (!Retryable(s)) return s;  // the attempt is over
  metrics_.PutBack(&request);   // oldest first, for the next flush
  return s;
}

absl::Status Task::UploadSnapshot(const v1::CheckpointCommit& commit) {
  auto ctx = CallContext(absl::Minutes(5), worker_key_);
  v1::SnapshotMeta stored;
  auto writer = stub_->UploadSnapshot(ctx.get(), &stored);
  v1::SnapshotMeta meta;
  meta.set_job_id(assignment_.job_id());
  meta.set_step(commit.step());
  meta.set_epoch(commit.epoch());
  meta.set_epoch_batch(commit.epoch_batch());
  meta.set_accuracy(accuracy_);
  return FinishUpload<v1::SnapshotChunk>(
      *ctx, *writer,
      [&](const std::function<bool(const v1::SnapshotChunk&)>& write) {
        return WriteSnapshotFile(commit.path(), meta, worker_id_,
                                 assignment_.attempt(), write);
      });
}

absl::Status Task::UploadTrainedModel(const std::string& path) {
  auto ctx = CallContext(absl::Minutes(5), worker_key_);
  v1::ModelFileMeta stored;
  auto writer = stub_->UploadTrainedModel(ctx.get(), &stored);
  return FinishUpload<v1::ModelFileChunk>(
      *ctx, *writer,
      [&](const std::function<bool(const v1::ModelFileChunk&)>& write) {
        return WriteFileChunks<v1::ModelFileChunk>(
            path, "trained model",
            [&](v1::ModelFileChunk* chunk, int64_t size) {
              v1::ModelFileMeta* meta = chunk->mutable_meta();
              meta->set_name(absl::StrCat(assignment_.job_id(), "-trained.pt"));
              meta->set_size_bytes(size);
              chunk->set_worker_id(worker_id_);
              chunk->set_job_id(assignment_.job_id());
              chunk->set_attempt(assignment_.attempt());
            },
            [](v1::ModelFileChunk* chunk) {
              chunk->clear_meta();
              chunk->clear_worker_id();
              chunk->clear_job_id();
              chunk->clear_attempt();
            },
            write);
      });
}

absl::StatusOr<std::string> Task::DownloadModelFile() {
  const v1::Assignment& a = assignment_;
  v1::PullModelFileRequest request;
  request.set_sha256(a.spec().model_file_sha256());
  request.set_worker_id(worker_id_);
  request.set_job_id(a.job_id());
  request.set_attempt(a.attempt());
  std::string data;
  v1::ModelFileMeta meta;
  absl::Status status = Retry("download model file", [&] {
    auto ctx = CallContext(absl::Minutes(5), worker_key_);
    auto reader = stub_->DownloadModelFile(ctx.get(), request);
    return ReadChunkStream("model file", *ctx, *reader, &meta, &data);
  });
  if (!status.ok()) {
    return absl::Status(
        status.code(), absl::StrCat("download model file: ", status.message()));
  }
  Log(absl::StrFormat("%s fetched model file %s (%s, %.1f MB)", a.job_id(),
                      meta.sha256().substr(0, 12), meta.name(),
                      data.size() / 1e6));
  return data;
}

absl::Status Task::FetchModelFile(TrainContext& c) {
  const std::string& sha256 = assignment_.spec().model_file_sha256();
  if (sha256.empty()) return absl::OkStatus();
  std::shared_ptr<ModelFileCache> cache = options_.model_files;
  if (cache == nullptr) {
    auto opened = ModelFileCache::Open("");
    if (!opened.ok()) return opened.status();
    cache = std::move(*opened);
    task_model_files_ = cache;  // kept until the task ends
  }
  auto path = cache->Path(sha256, [this] { return DownloadModelFile(); });
  if (!path.ok()) return path.status();
  c.spec.model_file = *path;
  // The bytes the trainer loads are checked again: the cache's file could
  // change between here and there.
  c.verify_model_file = [sha256](absl::string_view bytes) {
    return CheckModelFileDigest(bytes, sha256);
  };
  return absl::OkStatus();
}

absl::StatusOr<std::vector<char>> Task::DownloadSnapshot() {
  const v1::Assignment& a = assignment_;
  v1::PullSnapshotRequest request;
  request.set_worker_id(worker_id_);
  request.set_job_id(a.job_id());
  request.set_attempt(a.attempt());
  request.set_step(a.resume_snapshot_step());
  request.set_snapshot_job_id(a.resume_snapshot_job());
  request.set_has_step(true);
  std::string data;
  v1::SnapshotMeta meta;
  absl::Status status = Retry("download snapshot", [&] {
    auto ctx = CallContext(absl::Minutes(5), worker_key_);
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

void Task::Log(const std::string& line) {
  // The worker's own key never leaves it in a log line (the coordinator
  // also redacts its tokens).
  std::string text = RedactSecrets(line, {worker_key_});
  AgentLog(text);
  v1::LogLine entry;
  entry.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  entry.set_text(std::move(text));
  metrics_.Add(std::move(entry));
}

absl::Status Task::ConfineCheckpointPaths(TrainSpec& spec) const {
  const std::string root_name = "worker's checkpoint root (--checkpoint-root)";
  for (auto [field, path] :
       {std::pair{"checkpoint.directory", &spec.checkpoint_directory},
        std::pair{"checkpoint.resume_from", &spec.resume_from}}) {
    absl::StatusOr<std::string> confined =
        ResolveUnderRoot(field, *path, options_.checkpoint_root, root_name);
    if (!confined.ok()) return confined.status();
    *path = *confined;
  }
  return absl::OkStatus();
}

void Task::LogFailure(const absl::Status& status) {
  Log(absl::StrCat("job ", assignment_.job_id(), " rank ", assignment_.rank(),
                   " failed: ", status.ToString()));
}

absl::Status Task::CompleteOnce(bool success, const std::string& message) {
  v1::CompleteTaskRequest request;
  *request.mutable_task() = Ref();
  request.set_success(success);
  request.set_message(message);
  v1::CompleteTaskResponse response;
  return FromGrpcStatus(stub_->CompleteTask(
      CallContext(absl::Seconds(10), worker_key_).get(), request, &response));
}

void Task::EndAfterOverrun(const absl::Status& overrun) {
  if (!cancel_) {
    LogFailure(overrun);
    (void)FlushMetrics();
    const absl::Status s = CompleteOnce(false, overrun.ToString());
    if (!s.ok()) AgentLog(absl::StrCat("complete task: ", s.message()));
  }
  EndProcessAfterOverrun(overrun);
}

void Task::Run() {
  const v1::Assignment& a = assignment_;
  SetComputeThreads(1);  // LibTorch's pool and the BLAS library's
  absl::Status status;
  TrainResult result;
  // A flusher reports batched metrics twice a second while training.
  absl::Notification flusher_stop;
  std::thread flusher([&] {
    while (
        !flusher_stop.WaitForNotificationWithTimeout(absl::Milliseconds(500))) {
      (void)FlushMetrics();
    }
  });
  TrainContext c;
  c.spec = ToTrainSpec(a.spec());
  c.spec.dataset_access = options_.dataset_access;
  c.spec.checkpoint_tag = a.job_id();
  status = ConfineCheckpointPaths(c.spec);
  if (status.ok()) status = FetchModelFile(c);
  // Every job ends with its weights at the coordinator, whatever its
  // checkpoint flags: rank 0 of a job without a checkpoint directory writes
  // its final checkpoint into a scratch directory, uploads it as the job's
  // snapshot and removes it (the trainer checkpoints at the end when it
  // has a directory; interval 0: only there).
  std::optional<ScratchDirectory> final_only;
  bool last_uploaded = false;  // the last checkpoint reached the coordinator
  if (status.ok() && a.rank() == 0 && options_.upload_snapshots &&
      c.spec.checkpoint_directory.empty()) {
    absl::StatusOr<ScratchDirectory> scratch =
        ScratchDirectory::Create(absl::StrCat(a.job_id(), "-final"));
    if (scratch.ok()) {
      final_only = std::move(*scratch);
      c.spec.checkpoint_directory = final_only->path();
      c.spec.checkpoint_interval_steps = 0;
    } else {
      Log(absl::StrCat("no final snapshot: ", scratch.status().ToString()));
    }
  }
  if (status.ok()) {
    RankSetup setup;
    setup.backend = ToBackend(a.backend());
    setup.local_rank = a.local_rank();
    setup.store = std::make_shared<RemoteStore>(stub_, Ref(), worker_key_);
    setup.timeout = absl::Milliseconds(a.spec().collective_timeout_ms());
    setup.hostname = options_.host;
    setup.log_prefix = absl::StrCat(a.job_id(), " rank ", a.rank());
    setup.log = [this](const std::string& line) { Log(line); };
    setup.log_every = options_.log_every;
    setup.on_connected = [this](Communicator* comm) {
      comm_ = comm;
      if (cancel_) comm->Abort();  // cancelled while it connected
    };
    c.rank = a.rank();
    c.world_size = a.world_size();
    c.train_samples = a.train_samples();
    c.eval_samples = a.eval_samples();
    // One GPU per rank: the coordinator picked one of this worker's GPUs
    // that no other rank on the host has (gpu_placement.h).
    if (setup.backend == Backend::kNccl) c.cuda_device = a.cuda_device();
    c.cancel = &cancel_;
    c.resume_remaining = a.resume_remaining();
    if (!options_.sample_trace_dir.empty()) {
      c.sample_trace =
          absl::StrFormat("%s/%s-a%d-r%d.trace", options_.sample_trace_dir,
                          a.job_id(), a.attempt(), a.rank());
    }
    c.step = &step_;
    c.epoch = &epoch_;
    c.metadata = {{"MASTER_ADDR", a.master_addr()},
                  {"MASTER_PORT", absl::StrCat(a.master_port())},
                  {"job_id", a.job_id()},
                  {"attempt", absl::StrCat(a.attempt())},
                  {"host", options_.host}};
    if (!a.spec().model_file_sha256().empty()) {
      c.metadata[kModelFileMetadataKey] = a.spec().model_file_sha256();
    }
    c.shard = [this](int epoch,
                     bool eval) -> absl::StatusOr<std::vector<int64_t>> {
      v1::GetShardRequest request;
      *request.mutable_task() = Ref();
      request.set_epoch(epoch);
      request.set_split(eval ? v1::SHARD_SPLIT_EVAL : v1::SHARD_SPLIT_TRAIN);
      v1::GetShardResponse response;
      absl::Status s = Retry("get shard", [&] {
        return FromGrpcStatus(
            stub_->GetShard(CallContext(absl::Seconds(30), worker_key_).get(),
                            request, &response));
      });
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("get shard: ", s.message()));
      }
      return std::vector<int64_t>(response.indices().begin(),
                                  response.indices().end());
    };
    c.on_step = [this](const StepReport& m) { metrics_.Add(ToProto(m)); };
    c.on_checkpoint = [this, &last_uploaded](const CheckpointReport& report) {
      v1::CheckpointCommit commit = ToProto(report);
      // The commit is reported after the upload, so a restart on another
      // host finds at the coordinator what the ledger says is committed.
      if (options_.upload_snapshots) {
        absl::Status up = UploadSnapshot(commit);
        commit.set_uploaded(up.ok());
        last_uploaded = up.ok();
        if (!up.ok()) {
          Log(absl::StrCat(
              "snapshot of step ", commit.step(),
              " not uploaded (restarts need the file path): ", up.ToString()));
        }
      }
      metrics_.Add(commit);
    };
    if (a.has_resume_snapshot()) {
      c.read_resume = [this]() { return DownloadSnapshot(); };
      c.resume_name = absl::StrCat("the coordinator's snapshot of ",
                                   a.resume_snapshot_job().empty()
                                       ? a.job_id()
                                       : a.resume_snapshot_job(),
                                   " step ", a.resume_snapshot_step());
    }
    c.on_step_overrun = [this](const absl::Status& overrun) {
      EndAfterOverrun(overrun);
    };
    c.on_eval = [this](const EvalReport& e) {
      accuracy_ = e.accuracy;
      metrics_.Add(ToProto(e));
    };
    auto trained = RunRank(setup, std::move(c), &comm_owned_);
    if (trained.ok()) {
      result = *trained;
    } else {
      status = trained.status();
    }
  }
  if (status.ok() && !result.torchscript.empty() && options_.upload_snapshots) {
    // What `gradsync model pull --format torchscript` gives the user.
    absl::Status up = UploadTrainedModel(result.torchscript);
    Log(up.ok() ? absl::StrCat(a.job_id(),
                               ": the trained module (TorchScript) is at the "
                               "coordinator")
                : absl::StrCat("the trained module was not uploaded: ",
                               up.ToString()));
  }
  if (final_only) {
    // Its upload is over (on_checkpoint ran it): the scratch copy goes
    // before the task completes and is not named as if it were still there.
    final_only.reset();
    if (!result.checkpoint.empty()) {
      result.checkpoint = last_uploaded
                              ? "uploaded to the coordinator as the final "
                                "snapshot"
                              : "not kept (its upload failed)";
    }
  }
  // The error goes to the job's log with the metrics, so `gradsync logs`
  // and a failed job's status show why this rank failed.
  if (!status.ok() && !cancel_) LogFailure(status);
  flusher_stop.Notify();
  flusher.join();
  // Every buffered metric reaches the coordinator before the completion.
  (void)Retry("report metrics", [&] { return FlushMetrics(); });
  if (!cancel_) {
    const std::string message =
        status.ok() ? absl::StrFormat("%d steps%s", result.steps,
                                      result.checkpoint.empty()
                                          ? ""
                                          : ", checkpoint " + result.checkpoint)
                    : status.ToString();
    absl::Status s = Retry("complete task",
                           [&] { return CompleteOnce(status.ok(), message); });
    if (!s.ok()) Log(absl::StrCat("complete task: ", s.message()));
  }
  AgentLog(absl::StrCat(
      "job ", a.job_id(), " rank ", a.rank(), " finished: ",
      cancel_       ? absl::StrCat("cancelled",
                             status.ok() ? "" : " (" + status.ToString() + ")")
      : status.ok() ? "ok"
                    : status.ToString()));
  done_ = true;
}

}  // namespace gradsync
