// WorkerServiceImpl: gradsync.v1.WorkerService over a Coordinator (see
// proto/gradsync/v1/worker_service.proto for the protocol). Thread-safe; the
// Coordinator must outlive it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/control/coordinator.h"
#include "coordinator/persist/model_file_store.h"
#include "coordinator/persist/snapshot_store.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/call_gate.h"
#include "coordinator/server/store_session.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

// Heartbeat, the call every worker makes every second, and the store's
// set, add and get are served on gRPC's callback API: answered on the
// thread that read them, without the hand-off to a thread of the
// synchronous pool (at 10,000 workers that hand-off was most of the
// coordinator's CPU). A get of a key not yet there waits on a thread of
// its own, admitted by `waiting` like every waiting call. StoreSession (all
// five store calls as messages on one stream, store_session.h) is served
// the same way. The other calls are synchronous.
class WorkerServiceImpl final
    : public v1::WorkerService::WithCallbackMethod_Heartbeat<
          v1::WorkerService::WithCallbackMethod_StoreSet<
              v1::WorkerService::WithCallbackMethod_StoreGet<
                  v1::WorkerService::WithCallbackMethod_StoreAdd<
                      v1::WorkerService::WithCallbackMethod_StoreSession<
                          v1::WorkerService::Service>>>>>,
      public StoreOpServer {
 public:
  // Every call is first checked against `auth` (see auth.h), and every call
  // but RegisterWorker against the caller's worker key and assignment
  // (Coordinator::AuthorizeWorker); both must outlive the service.
  // Snapshots go to `snapshots` (at most `max_snapshot_bytes` each). Store
  // gets and waits and barriers pass through `waiting` (call_gate.h), which
  // must outlive the service too.
  // Model files are read from `model_files`.
  WorkerServiceImpl(Coordinator* coordinator, const Authenticator* auth,
                    SnapshotStore* snapshots, int64_t max_snapshot_bytes,
                    ModelFileStore* model_files, CallGate* waiting)
      : coordinator_(coordinator),
        auth_(auth),
        snapshots_(snapshots),
        max_snapshot_bytes_(max_snapshot_bytes),
        model_files_(model_files),
        waiting_(waiting) {}

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatResponse* response) override;
  grpc::Status GetShard(grpc::ServerContext* context,
                        const v1::GetShardRequest* request,
                        v1::GetShardResponse* response) override;
  grpc::Status ReportMetrics(grpc::ServerContext* context,
                             const v1::ReportMetricsRequest* request,
                             v1::ReportMetricsResponse* response) override;
  grpc::Status CompleteTask(grpc::ServerContext* context,
                            const v1::CompleteTaskRequest* request,
                            v1::CompleteTaskResponse* response) override;
  grpc::Status Deregister(grpc::ServerContext* context,
                          const v1::DeregisterRequest* request,
                          v1::DeregisterResponse* response) override;
  grpc::ServerUnaryReactor* StoreSet(grpc::CallbackServerContext* context,
                                     const v1::StoreSetRequest* request,
                                     v1::StoreSetResponse* response) override;
  grpc::ServerUnaryReactor* StoreGet(grpc::CallbackServerContext* context,
                                     const v1::StoreGetRequest* request,
                                     v1::StoreGetResponse* response) override;
  grpc::ServerUnaryReactor* StoreAdd(grpc::CallbackServerContext* context,
                                     const v1::StoreAddRequest* request,
                                     v1::StoreAddResponse* response) override;
  grpc::Status StoreWait(grpc::ServerContext* context,
                         const v1::StoreWaitRequest* request,
                         v1::StoreWaitResponse* response) override;
  grpc::Status StoreMultiGet(grpc::ServerContext* context,
                             const v1::StoreMultiGetRequest* request,
                             v1::StoreMultiGetResponse* response) override;
  grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply>* StoreSession(
      grpc::CallbackServerContext* context) override;
  grpc::Status Barrier(grpc::ServerContext* context,
                       const v1::BarrierRequest* request,
                       v1::BarrierResponse* response) override;

  // The callback methods above as plain blocking calls on any context (the
  // in-process fuzzer drives these; the server does not). ServeStoreGet
  // waits on the calling thread.
  grpc::Status ServeHeartbeat(const grpc::ServerContextBase& context,
                              const v1::HeartbeatRequest& request,
                              v1::HeartbeatResponse* response);
  grpc::Status ServeStoreSet(const grpc::ServerContextBase& context,
                             const v1::StoreSetRequest& request);
  grpc::Status ServeStoreAdd(const grpc::ServerContextBase& context,
                             const v1::StoreAddRequest& request,
                             v1::StoreAddResponse* response);
  grpc::Status ServeStoreGet(const grpc::ServerContextBase& context,
                             const v1::StoreGetRequest& request,
                             v1::StoreGetResponse* response);
  // One op of a StoreSession (StoreOpServer, store_session.h).
  bool ServeStoreOp(const grpc::ServerContextBase& context,
                    const v1::StoreOp& op, bool may_wait,
                    v1::StoreReply* reply) override;

  grpc::Status UploadSnapshot(grpc::ServerContext* context,
                              grpc::ServerReader<v1::SnapshotChunk>* reader,
                              v1::SnapshotMeta* response) override;
  grpc::Status DownloadSnapshot(
      grpc::ServerContext* context, const v1::PullSnapshotRequest* request,
      grpc::ServerWriter<v1::SnapshotChunk>* writer) override;
  grpc::Status DownloadModelFile(
      grpc::ServerContext* context, const v1::PullModelFileRequest* request,
      grpc::ServerWriter<v1::ModelFileChunk>* writer) override;
  grpc::Status UploadTrainedModel(
      grpc::ServerContext* context,
      grpc::ServerReader<v1::ModelFileChunk>* reader,
      v1::ModelFileMeta* response) override;

 private:
  // The worker token, then the worker key and assignment (rank < 0: any).
  grpc::Status Authorize(const grpc::ServerContextBase& context,
                         const std::string& worker_id,
                         const std::string& job_id, int attempt,
                         int rank) const;
  // Authorize for the caller's task, as `rank` (-1: any rank of it).
  grpc::Status AuthorizeTask(const grpc::ServerContextBase& context,
                             const v1::TaskRef& task, int rank) const;
  // The store of the caller's job attempt, after AuthorizeTask (any rank of
  // it to read; task.rank, proven, to `write`) and a check that no key is
  // empty and, for writes, that task.rank owns every key (key_owner.h).
  // A store read admitted: the attempt's store (AttemptStore, to read
  // `keys`), and for a read that may wait a CallGate pass to hold while it
  // waits and its bound (the request's timeout_ms, the call's deadline,
  // the coordinator's max wait); otherwise no pass and zero.
  struct StoreRead {
    std::shared_ptr<MemoryStore> store;
    std::optional<CallGate::Pass> pass;
    absl::Duration timeout;
  };
  absl::StatusOr<StoreRead> AdmitRead(const grpc::ServerContextBase& context,
                                      const v1::TaskRef& task,
                                      const std::vector<std::string>& keys,
                                      int64_t timeout_ms, bool may_wait,
                                      absl::string_view what) const;
  // The store's waiting calls: with `may_wait` false they wait for nothing
  // (DEADLINE_EXCEEDED at once for a missing key) and take no CallGate
  // pass.
  grpc::Status StoreGetFor(const grpc::ServerContextBase& context,
                           const v1::StoreGetRequest& request, bool may_wait,
                           v1::StoreGetResponse* response);
  grpc::Status StoreWaitFor(const grpc::ServerContextBase& context,
                            const v1::StoreWaitRequest& request, bool may_wait);
  grpc::Status StoreMultiGetFor(const grpc::ServerContextBase& context,
                                const v1::StoreMultiGetRequest& request,
                                bool may_wait,
                                v1::StoreMultiGetResponse* response);
  absl::StatusOr<std::shared_ptr<MemoryStore>> AttemptStore(
      const grpc::ServerContextBase& context, const v1::TaskRef& task,
      const std::vector<std::string>& keys, bool write) const;

  Coordinator* const coordinator_;
  const Authenticator* const auth_;
  SnapshotStore* const snapshots_;
  const int64_t max_snapshot_bytes_;
  ModelFileStore* const model_files_;
  CallGate* const waiting_;
};

}  // namespace gradsync
