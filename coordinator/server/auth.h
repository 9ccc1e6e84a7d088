// Token authentication for the coordinator's RPCs.
//
// Two roles, each with its own shared secret: users (gradsync.v1.JobService:
// submit, cancel, watch, list) and workers (gradsync.v1.WorkerService:
// register, heartbeat, shards, metrics, store, barrier). A call proves its
// role with the metadata "authorization: Bearer <token>"; a role whose token
// is empty is open (no authentication, the default). grpc.health.v1 and
// server reflection stay open. Tokens are compared in constant time and
// never logged.
// Thread safety: an Authenticator is immutable; Check() may run on any
// thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

struct AuthTokens {
  std::string user;    // empty = JobService open
  std::string worker;  // empty = WorkerService open
  // Worker calls must also come over TLS with a client certificate the
  // server verified (mutual TLS; see tls.h).
  bool worker_cert = false;
};

enum class Role { kUser, kWorker };

// The value of metadata `name` in a call ("" when absent).
std::string ClientMetadata(const grpc::ServerContextBase& context,
                           absl::string_view name);

class Authenticator {
 public:
  explicit Authenticator(AuthTokens tokens) : tokens_(std::move(tokens)) {}

  // OK when the role is open or the call carries its token (and, for
  // workers with worker_cert, a verified client certificate); otherwise
  // UNAUTHENTICATED saying what was missing or wrong and what the role
  // needs.
  grpc::Status Check(const grpc::ServerContextBase& context, Role role) const;
  // `text` with every occurrence of either token replaced by
  // "[redacted]" (for text a caller sent that others will read: logs).
  std::string Redact(std::string text) const;

 private:
  const AuthTokens tokens_;
};

}  // namespace gradsync
