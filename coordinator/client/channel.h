// The one way gradsync's clients (CLI, worker agent) open a channel to the
// coordinator: TLS when `tls` is enabled (see tls.h), plaintext otherwise;
// when a token is given, every call on the channel carries
// "authorization: Bearer <token>" (a client interceptor adds it, so no call
// site can forget it). See coordinator/wire/secrets.h.
// Thread safety: the returned channel is thread-safe, as any gRPC channel.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "coordinator/wire/tls.h"

namespace gradsync {

std::shared_ptr<grpc::Channel> MakeCoordinatorChannel(
    const std::string& address, const std::string& token,
    const ClientTls& tls = {}, int max_receive_message_bytes = 64 << 20);

}  // namespace gradsync
