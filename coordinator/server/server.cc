#include "coordinator/server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

// An existing state directory must be this user's (or root's, as a
// mounted volume may be) and not writable by every user: the coordinator
// trusts what it finds there.
absl::Status CheckStateDirectory(const std::string& dir) {
  struct stat st;
  if (dir.empty() || lstat(dir.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state directory ", dir, " is not a directory"));
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "state directory ", dir, " belongs to uid ", st.st_uid,
        ", not to this coordinator's user (uid ", geteuid(),
        "); its job records and snapshots would be someone else's"));
  }
  if ((st.st_mode & S_IWOTH) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "state directory %s is writable by every user (mode %04o); make it "
        "private (chmod o-w)",
        dir, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    ServerOptions options) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  if (options.auth.worker_cert && options.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "requiring worker certificates needs TLS with a client CA "
        "(--tls-cert, --tls-key, --tls-client-ca)");
  }
  std::unique_ptr<JobStore> store;
  if (absl::Status s = CheckStateDirectory(options.state_dir); !s.ok()) {
    return s;
  }
  if (!options.state_dir.empty()) {
    absl::StatusOr<std::unique_ptr<SqliteJobStore>> sqlite =
        SqliteJobStore::Open(options.state_dir);
    if (!sqlite.ok()) return sqlite.status();
    store = std::move(*sqlite);
  }
  std::unique_ptr<CoordinatorServer> s(new CoordinatorServer());
  // Snapshots live with the state; without a state directory, in a
  // temporary one that goes with the server.
  std::string snapshot_dir = options.state_dir + "/snapshots";
  std::string model_file_dir = options.state_dir + "/model-files";
  if (options.state_dir.empty()) {
    // Fresh and private: a predictable /tmp name could be planted with an
    // index and a snapshot by another user.
    absl::StatusOr<ScratchDirectory> scratch =
        ScratchDirectory::Create("coordinator");
    if (!scratch.ok()) return scratch.status();
    snapshot_dir = scratch->path() + "/snapshots";
    model_file_dir = scratch->path() + "/model-files";
    s->snapshot_scratch_ = std::move(*scratch);
  }
  absl::StatusOr<std::unique_ptr<SnapshotStore>> snapshots =
      SnapshotStore::Open(snapshot_dir, SnapshotRetention());
  if (!snapshots.ok()) return snapshots.status();
  s->snapshots_ = std::move(*snapshots);
  absl::StatusOr<std::unique_ptr<ModelFileStore>> model_files =
      ModelFileStore::Open(model_file_dir);
  if (!model_files.ok()) return model_files.status();
  s->model_files_ = std::move(*model_files);
  // A deleted job's snapshots go with it.
  options.coordinator.on_job_deleted =
      [snapshots = s->snapshots_.get()](const std::string& job_id) {
        snapshots->DropJob(job_id);
      };
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator =
      Coordinator::Create(options.coordinator, std::move(store));
  if (!coordinator.ok()) return coordinator.status();
  s->coordinator_ = std::move(*coordinator);
  s->auth_ = std::make_unique<Authenticator>(options.auth);
  s->waiting_ = std::make_unique<CallGate>(options.max_waiting_calls);
  s->job_service_ = std::make_unique<JobServiceImpl>(
      s->coordinator_.get(), s->auth_.get(), s->snapshots_.get(),
      s->model_files_.get(), options.max_model_file_bytes, s->waiting_.get());
  s->worker_service_ = std::make_unique<WorkerServiceImpl>(
      s->coordinator_.get(), s->auth_.get(), s->snapshots_.get(),
      options.max_snapshot_bytes, s->model_files_.get(), s->waiting_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  s->rpc_stats_ = std::make_unique<RpcStats>();
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(
      std::make_unique<RpcStatsInterceptorFactory>(s->rpc_stats_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.AddListeningPort(options.address, *credentials, &s->port_);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.SetMaxSendMessageSize(options.max_send_message_bytes);
  // Threads for every waiting call the gate admits, and spares for the
  // calls that do not wait (heartbeats above all).
  grpc::ResourceQuota quota("gradsync-coordinator");
  quota.SetMaxThreads(options.max_waiting_calls + 64);
  builder.SetResourceQuota(quota);
  builder.RegisterService(s->job_service_.get());
  builder.RegisterService(s->worker_service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.address,
        options.tls.cert_file.empty()
            ? " (address in use or invalid?)"
            : " (address in use or invalid, or the TLS certificate and key "
              "do not match?)"));
  }
  return s;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

std::string CoordinatorServer::local_address() const {
  return absl::StrCat("localhost:", port_);
}

void CoordinatorServer::Shutdown() {
  if (coordinator_) coordinator_->Shutdown();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
  }
}

void CoordinatorServer::Wait() {
  if (server_) server_->Wait();
}

}  // namespace gradsync
