// The coordinator's monitoring port: an HttpServer (http_server.h) over a
// running CoordinatorServer serving
//   /metrics                 the Prometheus text format
//                            (coordinator_metrics.h)
//   /                        the dashboard (dashboard/: page, script, style)
//   /api/jobs                the newest 100 jobs (ListJobsResponse, JSON)
//   /api/workers             ListWorkersResponse
//   /api/jobs/ID             a Job; 404 {"error": ...} when unknown
//   /api/jobs/ID/curves      its JobCurves
//   /api/jobs/ID/logs        the newest 200 lines of its log
//                            (GetJobLogsResponse)
// (JSON as the CLI's --json prints it), guarded by the user token when one
// is set.
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
