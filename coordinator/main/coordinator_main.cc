// gradsync-coordinator: the control-plane server.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "coordinator/client/stop_signals.h"
#include "coordinator/client/token_flags.h"
#include "coordinator/http/monitoring.h"
#include "coordinator/server/listen_policy.h"
#include "coordinator/server/server.h"
#include "gradsync/config.h"

int main(int argc, char** argv) {
  gradsync::ServerOptions options;
  double heartbeat_timeout_s = 3.0;
  double heartbeat_interval_s = 1.0;
  std::string port_range = "29500-29999";
  CLI::App app{"gradsync coordinator: jobs, rendezvous, shards, metrics"};
  app.set_version_flag("--version", GRADSYNC_VERSION);
  app.add_option("--listen", options.address, "host:port to serve on")
      ->envname("GRADSYNC_LISTEN")
      ->capture_default_str();
  app.add_option("--state-dir", options.state_dir,
                 "directory for the SQLite job database (empty: in memory)")
      ->envname("GRADSYNC_STATE_DIR");
  app.add_option("--heartbeat-timeout", heartbeat_timeout_s,
                 "seconds without heartbeat before a worker is dead")
      ->envname("GRADSYNC_HEARTBEAT_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heartbeat-interval", heartbeat_interval_s,
                 "seconds between worker heartbeats")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--port-range", port_range,
                 "data-plane ports handed out when workers offer none")
      ->capture_default_str();
  app.add_option("--max-world-size", options.coordinator.max_world_size,
                 "largest world size a job may ask for")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-active-jobs", options.coordinator.max_active_jobs,
                 "jobs pending or running at once; more are refused")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--keep-finished-jobs", options.coordinator.max_finished_jobs,
                 "finished jobs kept (record, events, snapshots); the oldest "
                 "beyond this are deleted")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  double keep_finished_days = 30;
  app.add_option("--keep-finished-for", keep_finished_days,
                 "days a finished job is kept before it is deleted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-workers", options.coordinator.max_workers,
                 "registered live workers; more are refused")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--data-root", options.coordinator.data_roots,
                 "dataset paths must lie under one of these (repeatable; "
                 "default: anywhere)")
      ->envname("GRADSYNC_DATA_ROOTS")
      ->delimiter(',');
  app.add_option("--max-snapshot-bytes", options.max_snapshot_bytes,
                 "largest model snapshot accepted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-waiting-calls", options.max_waiting_calls,
                 "store waits, barriers and watches served at once; more "
                 "fail with RESOURCE_EXHAUSTED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-message-bytes", options.max_receive_message_bytes,
                 "largest request accepted")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  gradsync::TokenFlags user_token(app, "user-token", "GRADSYNC_TOKEN",
                                  "token users must send; empty: open", "user");
  gradsync::TokenFlags worker_token(
      app, "worker-token", "GRADSYNC_WORKER_TOKEN",
      "token workers must send; empty: open", "worker");
  gradsync::TokenFlags metrics_token(
      app, "metrics-token", "GRADSYNC_METRICS_TOKEN",
      "read-only token for the monitoring port (/metrics, dashboard, JSON "
      "API); grants nothing on the gRPC port",
      "metrics");
  app.add_option("--tls-cert", options.tls.cert_file,
                 "serve TLS with this PEM certificate (chain)")
      ->envname("GRADSYNC_TLS_CERT");
  app.add_option("--tls-key", options.tls.key_file,
                 "PEM private key of --tls-cert")
      ->envname("GRADSYNC_TLS_KEY");
  app.add_option("--tls-client-ca", options.tls.client_ca_file,
                 "verify client certificates against this PEM CA (mutual TLS)")
      ->envname("GRADSYNC_TLS_CLIENT_CA");
  app.add_flag("--require-worker-cert", options.auth.worker_cert,
               "worker calls need a client certificate signed by "
               "--tls-client-ca")
      ->envname("GRADSYNC_REQUIRE_WORKER_CERT");
  std::string token_dir;
  app.add_option("--token-dir", token_dir,
                 "with no tokens given: read both from DIR/user-token and "
                 "DIR/worker-token, creating them (random, 0600) if missing")
      ->envname("GRADSYNC_TOKEN_DIR");
  std::string share_worker_token;
  app.add_option("--share-worker-token", share_worker_token,
                 "also write the worker token to DIR/worker-token (0600), "
                 "for workers to mount without the user token")
      ->envname("GRADSYNC_SHARE_WORKER_TOKEN");
  std::string http_listen;
  app.add_option("--http-listen", http_listen,
                 "host:port for the monitoring pages (Prometheus /metrics); "
                 "empty: off. HTTPS with --tls-cert. Readers need the "
                 "metrics token (or, over TLS, the user token); with no token "
                 "a non-loopback address is narrowed to loopback, as "
                 "--listen is")
      ->envname("GRADSYNC_HTTP_LISTEN");
  bool insecure_anywhere = false;
  app.add_flag("--insecure-listen-anywhere", insecure_anywhere,
               "serve a non-loopback --listen address without tokens "
               "(otherwise narrowed to loopback)")
      ->envname("GRADSYNC_INSECURE_LISTEN_ANYWHERE");
  CLI11_PARSE(app, argc, argv);
  gradsync::MonitoringOptions monitoring_options;
  for (auto [flags, out] :
       {std::pair{&user_token, &options.auth.user},
        std::pair{&worker_token, &options.auth.worker},
        std::pair{&metrics_token, &monitoring_options.metrics_token}}) {
    absl::StatusOr<std::string> token = flags->Load();
    if (!token.ok()) {
      std::fprintf(stderr, "gradsync-coordinator: %s\n",
                   std::string(token.status().message()).c_str());
      return 2;
    }
    *out = *token;
  }
  absl::StatusOr<gradsync::ListenPlan> plan =
      gradsync::PlanListen(options.address, options.auth.user,
                           options.auth.worker, token_dir, insecure_anywhere);
  if (!plan.ok()) {
    std::fprintf(stderr, "gradsync-coordinator: %s\n",
                 std::string(plan.status().message()).c_str());
    return 2;
  }
  options.address = plan->address;
  options.auth.user = plan->user_token;
  options.auth.worker = plan->worker_token;
  if (!plan->note.empty()) {
    std::fprintf(stderr, "gradsync-coordinator: %s\n", plan->note.c_str());
  }
  if (!share_worker_token.empty()) {
    absl::Status shared = gradsync::ShareToken(
        share_worker_token + "/worker-token", options.auth.worker);
    if (!shared.ok()) {
      std::fprintf(stderr, "gradsync-coordinator: --share-worker-token: %s\n",
                   std::string(shared.message()).c_str());
      return 2;
    }
  }

  int first = 0, last = 0;
  if (std::sscanf(port_range.c_str(), "%d-%d", &first, &last) != 2) {
    std::fprintf(stderr, "--port-range must look like 29500-29999 (got %s)\n",
                 port_range.c_str());
    return 2;
  }
  options.coordinator.port_range_first = first;
  options.coordinator.port_range_last = last;
  options.coordinator.heartbeat_timeout = absl::Seconds(heartbeat_timeout_s);
  options.coordinator.heartbeat_interval = absl::Seconds(heartbeat_interval_s);
  options.coordinator.finished_job_ttl = absl::Hours(24 * keep_finished_days);

  // Before gRPC starts its threads, so that they inherit the mask.
  gradsync::BlockStopSignals();

  auto server = gradsync::CoordinatorServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "gradsync-coordinator: %s\n",
                 server.status().ToString().c_str());
    return 1;
  }
  std::fprintf(
      stderr, "gradsync-coordinator %s listening on port %d (%s; state: %s)\n",
      GRADSYNC_VERSION, (*server)->port(),
      options.tls.cert_file.empty() ? "plaintext"
      : options.auth.worker_cert    ? "TLS, workers need certificates"
      : !options.tls.client_ca_file.empty()
          ? "TLS, client certificates verified"
          : "TLS",
      options.state_dir.empty() ? "in memory" : options.state_dir.c_str());
  std::unique_ptr<gradsync::HttpServer> monitoring;
  if (!http_listen.empty()) {
    absl::Status planned =
        gradsync::PlanMonitoring(options.auth.user, options.auth.worker,
                                 token_dir, options.tls, &monitoring_options);
    if (!planned.ok()) {
      std::fprintf(stderr, "gradsync-coordinator: %s\n",
                   std::string(planned.message()).c_str());
      return 2;
    }
    if (monitoring_options.metrics_token.empty() &&
        monitoring_options.user_token.empty() && !insecure_anywhere &&
        !gradsync::IsLoopbackAddress(http_listen)) {
      const std::string narrowed = gradsync::LoopbackOf(http_listen);
      std::fprintf(stderr,
                   "gradsync-coordinator: no user token: monitoring narrowed "
                   "from %s to %s\n",
                   http_listen.c_str(), narrowed.c_str());
      http_listen = narrowed;
    }
    monitoring_options.address = http_listen;
    monitoring_options.any_host = insecure_anywhere;
    auto started = gradsync::StartMonitoring(server->get(), monitoring_options);
    if (!started.ok()) {
      std::fprintf(stderr, "gradsync-coordinator: %s\n",
                   started.status().ToString().c_str());
      return 1;
    }
    monitoring = std::move(*started);
    std::fprintf(
        stderr, "gradsync-coordinator: monitoring on port %d (%s /metrics%s)\n",
        monitoring->port(), monitoring->tls() ? "HTTPS" : "HTTP",
        monitoring_options.metrics_token.empty() &&
                monitoring_options.user_token.empty()
            ? ""
            : ", token required");
  }
  gradsync::WaitForStopSignal();
  std::fprintf(stderr, "gradsync-coordinator: shutting down\n");
  if (monitoring) monitoring->Shutdown();
  (*server)->Shutdown();
  return 0;
}
