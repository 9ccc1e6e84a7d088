#include "coordinator/server/worker_service.h"

#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/server/key_owner.h"
#include "coordinator/server/model_file_rpc.h"
#include "coordinator/server/snapshot_rpc.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {
namespace {

// A callback unary call answered at once, on the thread that read it.
grpc::ServerUnaryReactor* FinishInline(grpc::CallbackServerContext* context,
                                       const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

grpc::Status WorkerServiceImpl::Authorize(
    const grpc::ServerContextBase& context, const std::string& worker_id,
    const std::string& job_id, int attempt, int rank) const {
  if (grpc::Status s = auth_->Check(context, Role::kWorker); !s.ok()) {
    return s;
  }
  return ToGrpcStatus(coordinator_->AuthorizeWorker(
      worker_id, ClientMetadata(context, kWorkerKeyHeader), job_id, attempt,
      rank));
}

grpc::Status WorkerServiceImpl::AuthorizeTask(
    const grpc::ServerContextBase& context, const v1::TaskRef& task,
    int rank) const {
  return Authorize(context, task.worker_id(), task.job_id(), task.attempt(),
                   rank);
}

grpc::Status WorkerServiceImpl::RegisterWorker(
    grpc::ServerContext* context, const v1::RegisterWorkerRequest* request,
    v1::RegisterWorkerResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kWorker); !s.ok()) {
    return s;
  }
  return Reply(coordinator_->RegisterWorker(*request), response);
}

grpc::Status WorkerServiceImpl::ServeHeartbeat(
    const grpc::ServerContextBase& context, const v1::HeartbeatRequest& request,
    v1::HeartbeatResponse* response) {
  // Identity only: an idle worker runs no task.
  if (grpc::Status s =
          Authorize(context, request.task().worker_id(), "", 0, -1);
      !s.ok()) {
    return s;
  }
  return Reply(coordinator_->Heartbeat(request), response);
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Heartbeat(
    grpc::CallbackServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  // Nothing in it blocks (the coordinator's lock is held for map lookups),
  // so it runs inline.
  return FinishInline(context, ServeHeartbeat(*context, *request, response));
}

grpc::Status WorkerServiceImpl::GetShard(grpc::ServerContext* context,
                                         const v1::GetShardRequest* request,
                                         v1::GetShardResponse* response) {
  if (grpc::Status s =
          AuthorizeTask(*context, request->task(), request->task().rank());
      !s.ok()) {
    return s;
  }
  return Reply(coordinator_->GetShard(*request), response);
}

grpc::Status WorkerServiceImpl::ReportMetrics(
    grpc::ServerContext* context, const v1::ReportMetricsRequest* request,
    v1::ReportMetricsResponse*) {
  // A rank reports its own steps; evaluation results and checkpoint commits
  // (which move the resume point and the sample ledger) come from rank 0.
  std::set<int> ranks;
  for (const v1::StepMetrics& step : request->steps())
    ranks.insert(step.rank());
  if (request->eval_size() > 0 || request->checkpoints_size() > 0) {
    ranks.insert(0);
  }
  // Log lines are the task's rank's.
  if (request->logs_size() > 0 || request->logs_dropped() > 0) {
    ranks.insert(request->task().rank());
  }
  if (ranks.size() > 1) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("report metrics: a worker reports for its own rank only "
                     "(this report names ranks ",
                     absl::StrJoin(ranks, ", "), ")"));
  }
  if (grpc::Status s = AuthorizeTask(*context, request->task(),
                                     ranks.empty() ? -1 : *ranks.begin());
      !s.ok()) {
    return s;
  }
  if (request->logs_size() == 0) {
    return ToGrpcStatus(coordinator_->ReportMetrics(*request));
  }
  // A worker redacts its secrets; the coordinator's tokens never reach a
  // reader of the logs either way.
  v1::ReportMetricsRequest redacted = *request;
  for (v1::LogLine& line : *redacted.mutable_logs()) {
    line.set_text(auth_->Redact(line.text()));
  }
  return ToGrpcStatus(coordinator_->ReportMetrics(redacted));
}

grpc::Status WorkerServiceImpl::CompleteTask(
    grpc::ServerContext* context, const v1::CompleteTaskRequest* request,
    v1::CompleteTaskResponse*) {
  if (grpc::Status s =
          AuthorizeTask(*context, request->task(), request->task().rank());
      !s.ok()) {
    return s;
  }
  return ToGrpcStatus(coordinator_->CompleteTask(*request));
}

grpc::Status WorkerServiceImpl::Deregister(grpc::ServerContext* context,
                                           const v1::DeregisterRequest* request,
                                           v1::DeregisterResponse*) {
  // Identity only: the worker itself (its key), whatever it runs.
  if (grpc::Status s =
          Authorize(*context, request->task().worker_id(), "", 0, -1);
      !s.ok()) {
    return s;
  }
  return ToGrpcStatus(coordinator_->Deregister(*request));
}

absl::StatusOr<std::shared_ptr<MemoryStore>> WorkerServiceImpl::AttemptStore(
    const grpc::ServerContextBase& context, const v1::TaskRef& task,
    const std::vector<std::string>& keys, bool write) const {
  // A write acts as task.rank: proven here, and bound to the keys that rank
  // owns (key_owner.h).
  if (grpc::Status s = AuthorizeTask(context, task, write ? task.rank() : -1);
      !s.ok()) {
    return FromGrpcStatus(s);
  }
  for (const std::string& key : keys) {
    if (key.empty()) {
      return absl::InvalidArgumentError("store key must not be empty");
    }
    const std::optional<int> owner = KeyOwner(key);
    if (write && owner.has_value() && *owner != task.rank()) {
      return absl::PermissionDeniedError(
          absl::StrCat("store key '", key, "' belongs to rank ", *owner,
                       "; rank ", task.rank(), " may not write it"));
    }
  }
  return coordinator_->Store(task.job_id(), task.attempt());
}

grpc::Status WorkerServiceImpl::ServeStoreSet(
    const grpc::ServerContextBase& context,
    const v1::StoreSetRequest& request) {
  auto store = AttemptStore(context, request.task(), {request.key()},
                            /*write=*/true);
  return ToGrpcStatus(store.ok() ? (*store)->Set(request.key(), request.value())
                                 : store.status());
}

grpc::ServerUnaryReactor* WorkerServiceImpl::StoreSet(
    grpc::CallbackServerContext* context, const v1::StoreSetRequest* request,
    v1::StoreSetResponse*) {
  return FinishInline(context, ServeStoreSet(*context, *request));
}

absl::StatusOr<WorkerServiceImpl::StoreRead> WorkerServiceImpl::AdmitRead(
    const grpc::ServerContextBase& context, const v1::TaskRef& task,
    const std::vector<std::string>& keys, int64_t timeout_ms, bool may_wait,
    absl::string_view what) const {
  auto store = AttemptStore(context, task, keys, /*write=*/false);
  if (!store.ok()) return store.status();
  StoreRead read{*std::move(store), std::nullopt, absl::ZeroDuration()};
  if (!may_wait) return read;
  absl::StatusOr<CallGate::Pass> pass = waiting_->Enter(what);
  if (!pass.ok()) return pass.status();
  read.pass.emplace(*std::move(pass));
  read.timeout =
      WaitTimeout(context, timeout_ms, coordinator_->options().max_wait);
  return read;
}

grpc::Status WorkerServiceImpl::StoreGetFor(
    const grpc::ServerContextBase& context, const v1::StoreGetRequest& request,
    bool may_wait, v1::StoreGetResponse* response) {
  absl::StatusOr<StoreRead> read =
      AdmitRead(context, request.task(), {request.key()}, request.timeout_ms(),
                may_wait, "store get");
  if (!read.ok()) return ToGrpcStatus(read.status());
  absl::StatusOr<std::string> value =
      read->store->Get(request.key(), read->timeout);
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::ServeStoreGet(
    const grpc::ServerContextBase& context, const v1::StoreGetRequest& request,
    v1::StoreGetResponse* response) {
  return StoreGetFor(context, request, /*may_wait=*/true, response);
}

namespace {

// Whether an answer given without waiting must be given again by a call
// that may wait: the keys were missing and the caller asked to wait.
bool MustWait(const grpc::Status& now, int64_t timeout_ms) {
  return now.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
         timeout_ms > 0;
}

}  // namespace

grpc::ServerUnaryReactor* WorkerServiceImpl::StoreGet(
    grpc::CallbackServerContext* context, const v1::StoreGetRequest* request,
    v1::StoreGetResponse* response) {
  // A key that is there (or a get that may not wait) is answered inline.
  grpc::Status now =
      StoreGetFor(*context, *request, /*may_wait=*/false, response);
  if (!MustWait(now, request->timeout_ms())) return FinishInline(context, now);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The wait must not hold a callback thread. The store (closed when its
  // attempt ends or the coordinator shuts down) wakes it by then at the
  // latest; the server's shutdown waits for the Finish. The CallGate pass
  // is given back inside ServeStoreGet, before the answer: a caller that
  // has it sees the slot free.
  std::thread([this, context, reactor, request, response] {
    reactor->Finish(ServeStoreGet(*context, *request, response));
  }).detach();
  return reactor;
}

grpc::Status WorkerServiceImpl::ServeStoreAdd(
    const grpc::ServerContextBase& context, const v1::StoreAddRequest& request,
    v1::StoreAddResponse* response) {
  auto store = AttemptStore(context, request.task(), {request.key()},
                            /*write=*/true);
  if (!store.ok()) return ToGrpcStatus(store.status());
  absl::StatusOr<int64_t> value = (*store)->Add(request.key(), request.delta());
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_value(*value);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::StoreAdd(
    grpc::CallbackServerContext* context, const v1::StoreAddRequest* request,
    v1::StoreAddResponse* response) {
  return FinishInline(context, ServeStoreAdd(*context, *request, response));
}

grpc::Status WorkerServiceImpl::StoreWaitFor(
    const grpc::ServerContextBase& context, const v1::StoreWaitRequest& request,
    bool may_wait) {
  std::vector<std::string> keys(request.keys().begin(), request.keys().end());
  absl::StatusOr<StoreRead> read =
      AdmitRead(context, request.task(), keys, request.timeout_ms(), may_wait,
                "store wait");
  if (!read.ok()) return ToGrpcStatus(read.status());
  return ToGrpcStatus(read->store->Wait(keys, read->timeout));
}

grpc::Status WorkerServiceImpl::StoreWait(grpc::ServerContext* context,
                                          const v1::StoreWaitRequest* request,
                                          v1::StoreWaitResponse*) {
  return StoreWaitFor(*context, *request, /*may_wait=*/true);
}

grpc::Status WorkerServiceImpl::StoreMultiGetFor(
    const grpc::ServerContextBase& context,
    const v1::StoreMultiGetRequest& request, bool may_wait,
    v1::StoreMultiGetResponse* response) {
  std::vector<std::string> keys(request.keys().begin(), request.keys().end());
  absl::StatusOr<StoreRead> read =
      AdmitRead(context, request.task(), keys, request.timeout_ms(), may_wait,
                "store multi-get");
  if (!read.ok()) return ToGrpcStatus(read.status());
  absl::StatusOr<std::vector<std::string>> values =
      read->store->MultiGet(keys, read->timeout);
  if (!values.ok()) return ToGrpcStatus(values.status());
  for (std::string& v : *values) response->add_values(std::move(v));
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::StoreMultiGet(
    grpc::ServerContext* context, const v1::StoreMultiGetRequest* request,
    v1::StoreMultiGetResponse* response) {
  return StoreMultiGetFor(*context, *request, /*may_wait=*/true, response);
}

bool WorkerServiceImpl::ServeStoreOp(const grpc::ServerContextBase& context,
                                     const v1::StoreOp& op, bool may_wait,
                                     v1::StoreReply* reply) {
  v1::StoreReply out;
  grpc::Status status;
  int64_t timeout_ms = 0;
  switch (op.op_case()) {
    case v1::StoreOp::kSet:
      status = ServeStoreSet(context, op.set());
      break;
    case v1::StoreOp::kAdd:
      status = ServeStoreAdd(context, op.add(), out.mutable_add());
      break;
    case v1::StoreOp::kGet:
      timeout_ms = op.get().timeout_ms();
      status = StoreGetFor(context, op.get(), may_wait, out.mutable_get());
      break;
    case v1::StoreOp::kWait:
      timeout_ms = op.wait().timeout_ms();
      status = StoreWaitFor(context, op.wait(), may_wait);
      break;
    case v1::StoreOp::kMultiGet:
      timeout_ms = op.multi_get().timeout_ms();
      status = StoreMultiGetFor(context, op.multi_get(), may_wait,
                                out.mutable_multi_get());
      break;
    case v1::StoreOp::kSync:
      break;  // ops are applied in order: all before it are
    case v1::StoreOp::OP_NOT_SET:
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "store session: an op names none of set, get, "
                            "add, wait, multi_get, sync");
      break;
  }
  if (!may_wait && MustWait(status, timeout_ms)) return false;
  if (!status.ok()) {
    out.clear_result();
    out.set_code(status.error_code());
    out.set_message(status.error_message());
  }
  *reply = std::move(out);
  return true;
}

grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply>*
WorkerServiceImpl::StoreSession(grpc::CallbackServerContext* context) {
  return new StoreSessionReactor(this, context);
}

grpc::Status WorkerServiceImpl::Barrier(grpc::ServerContext* context,
                                        const v1::BarrierRequest* request,
                                        v1::BarrierResponse*) {
  if (grpc::Status s =
          AuthorizeTask(*context, request->task(), request->task().rank());
      !s.ok()) {
    return s;
  }
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "barrier name must not be empty");
  }
  absl::StatusOr<std::shared_ptr<BarrierTable>> barriers =
      coordinator_->Barriers(request->task().job_id(),
                             request->task().attempt());
  if (!barriers.ok()) return ToGrpcStatus(barriers.status());
  absl::StatusOr<CallGate::Pass> pass = waiting_->Enter("barrier");
  if (!pass.ok()) return ToGrpcStatus(pass.status());
  return ToGrpcStatus(
      (*barriers)->Arrive(request->name(), request->task().rank(),
                          WaitDeadline(*context, request->timeout_ms(),
                                       coordinator_->options().max_wait)));
}

grpc::Status WorkerServiceImpl::UploadSnapshot(
    grpc::ServerContext* context, grpc::ServerReader<v1::SnapshotChunk>* reader,
    v1::SnapshotMeta* response) {
  v1::SnapshotChunk first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "snapshot upload: no chunk");
  }
  // Only rank 0 of the job's current attempt uploads.
  if (grpc::Status s = Authorize(*context, first.worker_id(),
                                 first.meta().job_id(), first.attempt(), 0);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<v1::Job> job = coordinator_->GetJob(first.meta().job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  SnapshotRetention retention;
  retention.keep_last = job->spec().snapshot_keep_last();
  retention.keep_best = job->spec().snapshot_keep_best();
  absl::Status storage_error;
  grpc::Status received =
      ReceiveSnapshot(first, reader, *snapshots_, retention,
                      max_snapshot_bytes_, response, &storage_error);
  if (received.ok() || !storage_error.ok()) {
    coordinator_->NoteSnapshotStorage(first.meta().job_id(), storage_error);
  }
  return received;
}

grpc::Status WorkerServiceImpl::DownloadSnapshot(
    grpc::ServerContext* context, const v1::PullSnapshotRequest* request,
    grpc::ServerWriter<v1::SnapshotChunk>* writer) {
  if (grpc::Status s = Authorize(*context, request->worker_id(),
                                 request->job_id(), request->attempt(), -1);
      !s.ok()) {
    return s;
  }
  const std::string& from = request->snapshot_job_id();
  if (!from.empty() && from != request->job_id()) {
    absl::StatusOr<v1::Job> job = coordinator_->GetJob(request->job_id());
    if (!job.ok()) return ToGrpcStatus(job.status());
    if (job->spec().checkpoint().resume_snapshot_job() != from) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("job ", request->job_id(),
                       " does not start from a snapshot of job ", from));
    }
  }
  return SendSnapshot(from.empty() ? request->job_id() : from,
                      request->has_step() ? request->step() : -1, *snapshots_,
                      writer);
}

grpc::Status WorkerServiceImpl::DownloadModelFile(
    grpc::ServerContext* context, const v1::PullModelFileRequest* request,
    grpc::ServerWriter<v1::ModelFileChunk>* writer) {
  if (grpc::Status s = Authorize(*context, request->worker_id(),
                                 request->job_id(), request->attempt(), -1);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<v1::Job> job = coordinator_->GetJob(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (job->spec().model_file_sha256() != request->sha256()) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("job ", request->job_id(), " does not train model file ",
                     request->sha256().substr(0, 64)));
  }
  return SendModelFile(request->sha256(), *model_files_, writer);
}

grpc::Status WorkerServiceImpl::UploadTrainedModel(
    grpc::ServerContext* context,
    grpc::ServerReader<v1::ModelFileChunk>* reader,
    v1::ModelFileMeta* response) {
  v1::ModelFileChunk first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "trained model upload: no chunk");
  }
  // Only rank 0 of the job's current attempt uploads, and only for a job
  // that trains a model file.
  if (grpc::Status s = Authorize(*context, first.worker_id(), first.job_id(),
                                 first.attempt(), 0);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<v1::Job> job = coordinator_->GetJob(first.job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (job->spec().model_file_sha256().empty()) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("job ", first.job_id(), " trains a built-in model"));
  }
  grpc::Status received = ReceiveModelFile(first, reader, *model_files_,
                                           max_snapshot_bytes_, response);
  if (received.ok()) {
    coordinator_->SetTrainedModel(first.job_id(), response->sha256());
  }
  return received;
}

}  // namespace gradsync
