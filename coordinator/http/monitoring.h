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
// (JSON as the CLI's --json prints it). Everything there is read-only.
//
// Who may read it (MonitoringOptions): the metrics token always; the user
// token only over TLS (it also grants submit and cancel on the gRPC port,
// so it never travels in the clear: over plain HTTP it is answered 401
// saying so). With neither token the port is open, to requests addressed to
// localhost only unless `any_host`.
// Thread safety: as HttpServer; the server must outlive the result.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/http/http_server.h"
#include "coordinator/server/server.h"
#include "coordinator/wire/tls.h"

namespace gradsync {

struct MonitoringOptions {
  std::string address;  // host:port
  std::string user_token;
  std::string metrics_token;
  std::string tls_cert_pem, tls_key_pem;  // both set: HTTPS only
  bool any_host = false;                  // open port: answer any Host header
};

// Fills in `options`' tokens and TLS from the coordinator's settings: the
// user token; when no metrics token is given and `token_dir` is, the one in
// token_dir/metrics-token (created, random, 0600, when missing); the
// certificate and key of `tls` (read now). INVALID_ARGUMENT when the metrics
// token equals the user or worker token; errors about files name them.
absl::Status PlanMonitoring(const std::string& user_token,
                            const std::string& worker_token,
                            const std::string& token_dir,
                            const ServerTlsFiles& tls,
                            MonitoringOptions* options);

// FAILED_PRECONDITION for a user token on plain HTTP without a metrics
// token (nobody could read the port); otherwise as HttpServer::Start.
absl::StatusOr<std::unique_ptr<HttpServer>> StartMonitoring(
    CoordinatorServer* server, MonitoringOptions options);

}  // namespace gradsync
