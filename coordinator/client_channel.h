// The one way gradsync's clients (CLI, worker agent) open a channel to the
// coordinator: insecure transport and, when a token is given, every call on
// the channel carries "authorization: Bearer <token>" (a client
// interceptor adds it, so no call site can forget it). See auth.h.
// Thread safety: the returned channel is thread-safe, as any gRPC channel.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace gradsync {

std::shared_ptr<grpc::Channel> MakeCoordinatorChannel(
    const std::string& address, const std::string& token,
    int max_receive_message_bytes = 64 << 20);

}  // namespace gradsync
