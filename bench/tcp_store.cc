#include "bench/tcp_store.h"

#if GRADSYNC_BENCH_WITH_TORCH
namespace gradsync::bench {

std::unique_ptr<c10d::TCPStore> TcpStoreServer() {
  c10d::TCPStoreOptions opts;
  opts.port = 0;
  opts.isServer = true;
  opts.waitWorkers = false;
  return std::make_unique<c10d::TCPStore>("127.0.0.1", opts);
}

c10::intrusive_ptr<c10d::TCPStore> TcpStoreClient(
    uint16_t port, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = port;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

}  // namespace gradsync::bench
#endif
