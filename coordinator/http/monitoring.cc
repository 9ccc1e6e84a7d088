#include "coordinator/http/monitoring.h"

#include <google/protobuf/struct.pb.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/http/coordinator_metrics.h"
#include "coordinator/http/embedded_files.h"
#include "coordinator/server/listen_policy.h"
#include "coordinator/wire/proto_json.h"

namespace gradsync {
namespace {

// The newest lines of a job's log that /api/jobs/ID/logs returns.
constexpr int kDashboardLogLines = 200;

HttpResponse Json(const google::protobuf::Message& message) {
  return {200, "application/json", ToJson(message), {}};
}

// {"error": "..."} with the HTTP status of a failed coordinator call.
HttpResponse JsonError(const absl::Status& status) {
  google::protobuf::Struct error;
  (*error.mutable_fields())["error"].set_string_value(
      std::string(status.message()));
  HttpResponse response = Json(error);
  response.status = status.code() == absl::StatusCode::kNotFound          ? 404
                    : status.code() == absl::StatusCode::kInvalidArgument ? 400
                                                                          : 500;
  return response;
}

template <typename T>
HttpResponse JsonOr(const absl::StatusOr<T>& result) {
  return result.ok() ? Json(*result) : JsonError(result.status());
}

HttpResponse File(const std::string& path) {
  for (const EmbeddedFile& f : EmbeddedFiles()) {
    if (path != f.path) continue;
    HttpResponse response;
    response.content_type =
        absl::EndsWith(path, ".html") ? "text/html; charset=utf-8"
        : absl::EndsWith(path, ".js") ? "text/javascript; charset=utf-8"
                                      : "text/css; charset=utf-8";
    response.body = f.content;
    return response;
  }
  return {404, "text/plain; charset=utf-8", "no such file\n", {}};
}

}  // namespace

absl::Status PlanMonitoring(const std::string& user_token,
                            const std::string& worker_token,
                            const std::string& token_dir,
                            const ServerTlsFiles& tls,
                            MonitoringOptions* options) {
  options->user_token = user_token;
  if (options->metrics_token.empty() && !token_dir.empty()) {
    bool created = false;
    absl::StatusOr<std::string> token =
        LoadOrCreateToken(token_dir + "/metrics-token", &created);
    if (!token.ok()) return token.status();
    options->metrics_token = *token;
  }
  if (!options->metrics_token.empty() &&
      (options->metrics_token == user_token ||
       options->metrics_token == worker_token)) {
    return absl::InvalidArgumentError(
        "the metrics token must differ from the user and worker tokens (it "
        "is read-only and may sit in a scraper's configuration)");
  }
  if (tls.cert_file.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> cert = ReadPemFile(tls.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPemFile(tls.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  options->tls_cert_pem = *std::move(cert);
  options->tls_key_pem = *std::move(key);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpServer>> StartMonitoring(
    CoordinatorServer* server, MonitoringOptions monitoring) {
  HttpServerOptions options;
  options.address = monitoring.address;
  const bool tls = !monitoring.tls_cert_pem.empty();
  if (!monitoring.metrics_token.empty()) {
    options.tokens.push_back(monitoring.metrics_token);
  }
  if (!monitoring.user_token.empty()) {
    if (tls) {
      options.tokens.push_back(monitoring.user_token);
    } else if (monitoring.metrics_token.empty()) {
      return absl::FailedPreconditionError(
          "the monitoring port is plain HTTP, where the user token is never "
          "accepted: give it a read-only --metrics-token (or serve TLS with "
          "--tls-cert)");
    } else {
      options.refused_tokens.emplace_back(
          monitoring.user_token,
          "the user token is never accepted over plain HTTP, where it would "
          "travel in the clear: use the metrics token, or serve TLS");
    }
  }
  options.token_hint = absl::StrCat(
      "this coordinator's monitoring pages need its metrics token",
      tls ? " or its user token" : "",
      " (Authorization: Bearer <token>, or as the Basic password)");
  options.loopback_hosts_only = !monitoring.any_host;
  options.tls_cert_pem = std::move(monitoring.tls_cert_pem);
  options.tls_key_pem = std::move(monitoring.tls_key_pem);
  Coordinator* coordinator = &server->coordinator();
  options.routes.emplace_back("/metrics", [server](const HttpRequest&) {
    HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = RenderMetrics(CollectMetricsView(*server));
    return response;
  });
  options.routes.emplace_back(
      "/", [](const HttpRequest&) { return File("index.html"); });
  options.routes.emplace_back(
      R"(/(dashboard\.(?:js|css)))",
      [](const HttpRequest& request) { return File(request.groups[0]); });
  options.routes.emplace_back("/api/jobs", [coordinator](const HttpRequest&) {
    absl::StatusOr<Coordinator::JobPage> page = coordinator->ListJobs(0, "");
    if (!page.ok()) return JsonError(page.status());
    v1::ListJobsResponse response;
    for (v1::Job& job : page->jobs) *response.add_jobs() = std::move(job);
    response.set_next_page_token(page->next_page_token);
    return Json(response);
  });
  options.routes.emplace_back(
      "/api/workers", [coordinator](const HttpRequest&) {
        v1::ListWorkersResponse response;
        for (v1::WorkerInfo& w : coordinator->ListWorkers()) {
          *response.add_workers() = std::move(w);
        }
        return Json(response);
      });
  options.routes.emplace_back(
      "/api/jobs/([A-Za-z0-9_-]+)", [coordinator](const HttpRequest& request) {
        return JsonOr(coordinator->GetJob(request.groups[0]));
      });
  options.routes.emplace_back(
      "/api/jobs/([A-Za-z0-9_-]+)/curves",
      [coordinator](const HttpRequest& request) {
        return JsonOr(coordinator->GetJobCurves(request.groups[0]));
      });
  options.routes.emplace_back("/api/jobs/([A-Za-z0-9_-]+)/logs",
                              [coordinator](const HttpRequest& request) {
                                v1::GetJobLogsRequest logs;
                                logs.set_job_id(request.groups[0]);
                                logs.set_max_lines(kDashboardLogLines);
                                return JsonOr(coordinator->GetJobLogs(logs));
                              });
  return HttpServer::Start(std::move(options));
}

}  // namespace gradsync
