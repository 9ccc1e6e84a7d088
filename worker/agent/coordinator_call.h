// What the agent's parts (agent.cc, task.cc) share when they talk to the
// coordinator and to the log: a call context with a deadline that carries
// the worker's key, and the log line format. Internal to worker/agent/.
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {

// A call context with a deadline, sending the worker key once registered.
inline std::unique_ptr<grpc::ClientContext> CallContext(
    absl::Duration timeout, const std::string& worker_key) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!worker_key.empty()) ctx->AddMetadata(kWorkerKeyHeader, worker_key);
  return ctx;
}

inline void AgentLog(const std::string& line) {
  std::fprintf(stderr, "gradsync-worker: %s\n", line.c_str());
}

}  // namespace gradsync
