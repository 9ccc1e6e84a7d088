#include "coordinator/http/monitoring.h"

#include <utility>

#include "coordinator/http/coordinator_metrics.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<HttpServer>> StartMonitoring(
    CoordinatorServer* server, const std::string& address,
    const std::string& user_token) {
  HttpServerOptions options;
  options.address = address;
  options.token = user_token;
  options.routes.emplace_back("/metrics", [server](const HttpRequest&) {
    HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = RenderMetrics(CollectMetricsView(*server));
    return response;
  });
  return HttpServer::Start(std::move(options));
}

}  // namespace gradsync
