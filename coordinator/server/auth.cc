#include "coordinator/server/auth.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {
namespace {

constexpr absl::string_view kBearer = "Bearer ";

}  // namespace

std::string ClientMetadata(const grpc::ServerContextBase& context,
                           absl::string_view name) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(grpc::string_ref(name.data(), name.size()));
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

grpc::Status Authenticator::Check(const grpc::ServerContextBase& context,
                                  Role role) const {
  if (role == Role::kWorker && tokens_.worker_cert) {
    const std::shared_ptr<const grpc::AuthContext> peer =
        context.auth_context();
    if (peer == nullptr || !peer->IsPeerAuthenticated()) {
      return grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          "missing client certificate: worker calls need mutual TLS "
          "(--tls-cert "
          "and --tls-key on the worker, signed by the coordinator's "
          "--tls-client-ca)");
    }
  }
  const std::string& want = role == Role::kUser ? tokens_.user : tokens_.worker;
  if (want.empty()) return grpc::Status::OK;
  const char* name = role == Role::kUser ? "user" : "worker";
  const char* how = role == Role::kUser
                        ? "--token or GRADSYNC_TOKEN"
                        : "--token or GRADSYNC_WORKER_TOKEN on the worker";
  const std::string header = ClientMetadata(context, "authorization");
  if (header.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        absl::StrCat("missing token: this call needs the ",
                                     name, " token (", how, ")"));
  }
  absl::string_view got = header;
  if (!absl::ConsumePrefix(&got, kBearer) || !KeysEqual(got, want)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        absl::StrCat("wrong token: this call needs the ", name,
                                     " token (", how, ")"));
  }
  return grpc::Status::OK;
}

}  // namespace gradsync

namespace gradsync {

std::string Authenticator::Redact(std::string text) const {
  return RedactSecrets(std::move(text), {tokens_.user, tokens_.worker});
}

}  // namespace gradsync
