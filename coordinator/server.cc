#include "coordinator/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>

#include "absl/strings/str_cat.h"

namespace gradsync {

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
  if (!options.state_dir.empty()) {
    absl::StatusOr<std::unique_ptr<SqliteJobStore>> sqlite =
        SqliteJobStore::Open(options.state_dir);
    if (!sqlite.ok()) return sqlite.status();
    store = std::move(*sqlite);
  }
  std::unique_ptr<CoordinatorServer> s(new CoordinatorServer());
  absl::StatusOr<std::unique_ptr<Coordinator>> coordinator =
      Coordinator::Create(options.coordinator, std::move(store));
  if (!coordinator.ok()) return coordinator.status();
  s->coordinator_ = std::move(*coordinator);
  s->auth_ = std::make_unique<Authenticator>(options.auth);
  s->job_service_ =
      std::make_unique<JobServiceImpl>(s->coordinator_.get(), s->auth_.get());
  s->worker_service_ = std::make_unique<WorkerServiceImpl>(
      s->coordinator_.get(), s->auth_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, *credentials, &s->port_);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.SetMaxSendMessageSize(options.max_send_message_bytes);
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
