// CoordinatorServer: a running gRPC server with JobService, WorkerService,
// grpc.health.v1 and server reflection over one Coordinator; every call is
// counted and timed in rpc_stats().
//
// Start() binds (port 0 picks a free port; see port()). Shutdown() wakes
// blocked calls, then stops the server; the destructor calls it.
// Thread-safe after Start().
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/persist/model_file_store.h"
#include "coordinator/persist/snapshot_store.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/call_gate.h"
#include "coordinator/server/job_service.h"
#include "coordinator/server/rpc_stats.h"
#include "coordinator/server/worker_service.h"
#include "coordinator/wire/tls.h"
#include "foundation/files/scratch_directory.h"

namespace gradsync {

struct ServerOptions {
  std::string address = "0.0.0.0:50051";  // host:port; port 0 = any free
  // Empty = keep nothing on disk. An existing one must be this user's (or
  // root's) and not writable by every user (FAILED_PRECONDITION): what is
  // in it is trusted (job records, model snapshots). A new one is 0700.
  std::string state_dir;
  // Requests larger than this are rejected with RESOURCE_EXHAUSTED.
  int max_receive_message_bytes = 4 << 20;
  int max_send_message_bytes = 64 << 20;
  int64_t max_snapshot_bytes = int64_t{4} << 30;    // one model snapshot
  int64_t max_model_file_bytes = int64_t{4} << 30;  // one uploaded model
  // Calls that may wait at once (store gets and waits, barriers, watches;
  // call_gate.h); the server keeps this many threads plus spares for the
  // rest, so heartbeats always find one. The default lets every rank of a
  // job of the largest default world size (1,024) wait at a barrier or a
  // store get at once, twice over.
  int max_waiting_calls = 2048;
  CoordinatorOptions coordinator;
  AuthTokens auth;     // empty tokens: no authentication (see auth.h)
  ServerTlsFiles tls;  // empty: plaintext (see tls.h)
};

class CoordinatorServer {
 public:
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      ServerOptions options);
  ~CoordinatorServer();

  int port() const { return port_; }
  // "localhost:<port>", for clients in the same process or host.
  std::string local_address() const;
  Coordinator& coordinator() { return *coordinator_; }
  SnapshotStore& snapshots() { return *snapshots_; }
  ModelFileStore& model_files() { return *model_files_; }
  const RpcStats& rpc_stats() const { return *rpc_stats_; }
  // Calls waiting now (call_gate.h).
  int waiting_calls() const { return waiting_->waiting(); }

  void Shutdown();
  // Blocks until Shutdown() is called from another thread.
  void Wait();

 private:
  CoordinatorServer() = default;

  // Without a state directory: a private one (mode 0700, unpredictable
  // name) the snapshots and model files live in, removed with the server
  // (after them).
  std::optional<ScratchDirectory> snapshot_scratch_;
  std::unique_ptr<SnapshotStore> snapshots_;
  std::unique_ptr<ModelFileStore> model_files_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<CallGate> waiting_;    // before the services that use it
  std::unique_ptr<RpcStats> rpc_stats_;  // outlives the server's calls
  std::unique_ptr<JobServiceImpl> job_service_;
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace gradsync
