// The c10d TCPStore side of the control-plane benchmark (LibTorch's, as
// torchrun's c10d rendezvous uses it): a server store on a free loopback
// port, and client stores connected to it. Only with LibTorch
// (GRADSYNC_BENCH_WITH_TORCH). Each store is used by one thread at a time.
#pragma once

#if GRADSYNC_BENCH_WITH_TORCH
#include <chrono>
#include <cstdint>
#include <memory>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace gradsync::bench {

// The server store, not waiting for clients; its port is getPort().
std::unique_ptr<c10d::TCPStore> TcpStoreServer();
// A client of the server at `port` whose blocking calls wait `timeout`
// (intrusive, as c10d's process groups hold their store).
c10::intrusive_ptr<c10d::TCPStore> TcpStoreClient(
    uint16_t port, std::chrono::milliseconds timeout);

}  // namespace gradsync::bench
#endif
