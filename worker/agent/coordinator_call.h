// What the agent's parts (agent.cc, task.cc) share when they talk to the
// coordinator and to the log: a call context with a deadline that carries
// the worker's key, and the log line format. Internal to worker/agent/.
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/wire/secrets.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

// A call context with a deadline, sending the worker key once registered.
inline std::unique_ptr<grpc::ClientContext> CallContext(
    absl::Duration timeout, const std::string& worker_key) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!worker_key.empty()) ctx->AddMetadata(kWorkerKeyHeader, worker_key);
  return ctx;
}

// One line of the worker's log on stderr, escaped (file names and what the
// coordinator relays are not trusted to be terminal-safe or one line).
inline void AgentLog(const std::string& line) {
  LogLine("gradsync-worker", line);
}

}  // namespace gradsync
