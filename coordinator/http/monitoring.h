// The coordinator's monitoring port: an HttpServer (http_server.h) over a
// running CoordinatorServer serving
//   /metrics   the Prometheus text format (coordinator_metrics.h)
// guarded by the user token when one is set.
// Thread safety: as HttpServer; the server must outlive the result.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/http/http_server.h"
#include "coordinator/server/server.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<HttpServer>> StartMonitoring(
    CoordinatorServer* server, const std::string& address,
    const std::string& user_token);

}  // namespace gradsync
