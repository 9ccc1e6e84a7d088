// gradsync-worker: the worker agent. Registers with the coordinator and runs
// the training tasks it is assigned until SIGINT/SIGTERM, or with
// --exit-after-job / --job until its one job has ended (exit 0 when that
// job SUCCEEDED, 1 otherwise).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "absl/strings/str_format.h"
#include "coordinator/client/channel.h"
#include "coordinator/client/stop_signals.h"
#include "coordinator/client/tls_flags.h"
#include "coordinator/client/token_flags.h"
#include "foundation/text/terminal_text.h"
#include "gradsync/config.h"
#include "loader/cached_dataset.h"
#include "worker/agent/agent.h"
#include "worker/agent/health_file.h"
#include "worker/agent/model_file_cache.h"
#include "worker/model/script_output.h"
#include "worker/train/host_allocator.h"
#include "worker/train/host_tensor_limit.h"

int main(int argc, char** argv) {
  std::string coordinator = "localhost:50051";
  gradsync::AgentOptions options;
  char hostname[256] = "127.0.0.1";
  CLI::App app{"gradsync worker: runs training tasks for the coordinator"};
  app.set_version_flag("--version", GRADSYNC_VERSION);
  app.add_option("--coordinator,-c", coordinator, "coordinator host:port")
      ->envname("GRADSYNC_COORDINATOR")
      ->capture_default_str();
  app.add_option("--host", options.host,
                 "address peers reach this worker at (default: 127.0.0.1, "
                 "or $GRADSYNC_WORKER_HOST; 'hostname' = this host's name)")
      ->envname("GRADSYNC_WORKER_HOST")
      ->capture_default_str();
  app.add_option("--ports", options.free_ports,
                 "data-plane ports this worker may offer as MASTER_PORT");
  gradsync::TokenFlags token(app, "token", "GRADSYNC_WORKER_TOKEN",
                             "worker token, when the coordinator needs one",
                             "worker", "worker-token");
  gradsync::ClientTlsFlags tls(app);
  app.add_option("--data-root", options.dataset_access.data_roots,
                 "data sets must lie under one of these, links in them "
                 "included (repeatable; default: anywhere)")
      ->envname("GRADSYNC_DATA_ROOTS")
      ->delimiter(',');
  app.add_option("--max-image-pixels", options.dataset_access.decode.max_pixels,
                 "images declaring more pixels are refused before decoding")
      ->envname("GRADSYNC_MAX_IMAGE_PIXELS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-image-bytes",
                 options.dataset_access.decode.max_file_bytes,
                 "larger image files are refused before reading")
      ->envname("GRADSYNC_MAX_IMAGE_BYTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  int64_t decoded_cache_mb = gradsync::DefaultDecodedCacheBytes() >> 20;
  app.add_option("--decoded-cache-mb", decoded_cache_mb,
                 "memory for decoded images kept between epochs, shared by "
                 "this worker's tasks (0: decode every epoch)")
      ->envname("GRADSYNC_DECODED_CACHE_MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  int64_t memory_limit_mb = gradsync::DefaultHostTensorLimit() >> 20;
  app.add_option("--memory-limit-mb", memory_limit_mb,
                 "most memory this worker's CPU tensors may hold (a task "
                 "whose model would take more fails, naming it; 0: no "
                 "limit); default 80% of the host's or container's memory")
      ->envname("GRADSYNC_MEMORY_LIMIT_MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--checkpoint-root", options.checkpoint_root,
                 "jobs' checkpoint directories and resume_from paths are "
                 "taken under this directory or must resolve into it")
      ->envname("GRADSYNC_CHECKPOINT_ROOT")
      ->capture_default_str();
  std::string model_cache;
  app.add_option("--model-cache", model_cache,
                 "keep model files fetched from the coordinator here (mode "
                 "0700; default: a private temporary directory)")
      ->envname("GRADSYNC_MODEL_CACHE");
  app.add_option("--log-every", options.log_every, "steps between log lines")
      ->capture_default_str();
  app.add_option("--sample-trace-dir", options.sample_trace_dir,
                 "append every trained batch's sample indices to files here "
                 "(for exactly-once checks)")
      ->envname("GRADSYNC_SAMPLE_TRACE_DIR");
  app.add_option("--health-file", options.health_file,
                 "rewrite this file after every answered heartbeat")
      ->envname("GRADSYNC_WORKER_HEALTH_FILE");
  app.add_flag("--exit-after-job", options.exit_after_job,
               "run the first job assigned (every attempt of it), then exit: "
               "0 when it SUCCEEDED, 1 when it failed or was cancelled "
               "(a Slurm task or Kubernetes pod that lives for one job)")
      ->envname("GRADSYNC_EXIT_AFTER_JOB");
  app.add_option("--job", options.job_id,
                 "run only this job, then exit as --exit-after-job does "
                 "(exit 1 at once if the coordinator has no such job)")
      ->envname("GRADSYNC_JOB");
  double idle_timeout_s = absl::ToDoubleSeconds(options.idle_timeout);
  app.add_option("--idle-timeout", idle_timeout_s,
                 "with --exit-after-job or --job: exit 1 when no task was "
                 "assigned within this many seconds")
      ->envname("GRADSYNC_IDLE_TIMEOUT")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool check_health = false;
  double health_max_age_s = 15;
  app.add_flag("--check-health", check_health,
               "exit 0 if the agent writing --health-file heard from the "
               "coordinator within --health-max-age (a container health "
               "check), 1 otherwise");
  app.add_option("--health-max-age", health_max_age_s, "seconds")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.idle_timeout = absl::Seconds(idle_timeout_s);
  // Tasks' tensors reuse freed memory instead of faulting in fresh pages
  // every step (host_allocator.h).
  gradsync::KeepFreedHostMemory();
  gradsync::LimitHostTensorMemory(memory_limit_mb << 20);
  options.dataset_access.decoded_cache =
      std::make_shared<gradsync::MemoryBudget>(decoded_cache_mb << 20);
  if (check_health) {
    if (options.health_file.empty()) {
      gradsync::LogLine("gradsync-worker",
                        "--check-health needs "
                        "--health-file or GRADSYNC_WORKER_HEALTH_FILE");
      return 2;
    }
    absl::StatusOr<std::string> health = gradsync::CheckWorkerHealth(
        options.health_file, absl::Seconds(health_max_age_s));
    std::fprintf(health.ok() ? stdout : stderr, "%s\n",
                 health.ok() ? health->c_str()
                             : std::string(health.status().message()).c_str());
    return health.ok() ? 0 : 1;
  }
  // A model file's prints and warnings reach the log escaped, one line each
  // (script_output.h).
  gradsync::RouteModelOutput();
  absl::StatusOr<std::unique_ptr<gradsync::ModelFileCache>> cache =
      gradsync::ModelFileCache::Open(model_cache);
  if (!cache.ok()) {
    gradsync::LogLine("gradsync-worker", cache.status().message());
    return 2;
  }
  options.model_files = std::move(*cache);
  // The coordinator may still be creating its --token-dir.
  absl::StatusOr<std::string> worker_token = token.Load(absl::Minutes(2));
  if (!worker_token.ok()) {
    gradsync::LogLine(
        "gradsync-worker",
        absl::StrFormat("%s",
                        std::string(worker_token.status().message()).c_str()));
    return 2;
  }
  absl::StatusOr<gradsync::ClientTls> client_tls = tls.Load();
  if (!client_tls.ok()) {
    gradsync::LogLine(
        "gradsync-worker",
        absl::StrFormat("%s",
                        std::string(client_tls.status().message()).c_str()));
    return 2;
  }
  if (options.host == "hostname" &&
      gethostname(hostname, sizeof hostname) == 0) {
    options.host = hostname;
  }

  gradsync::BlockStopSignals();

  gradsync::Agent agent(
      gradsync::v1::WorkerService::NewStub(gradsync::MakeCoordinatorChannel(
          coordinator, *worker_token, *client_tls)),
      options);
  std::thread waiter([&] {
    const int sig = gradsync::WaitForStopSignal();
    gradsync::LogLine("gradsync-worker",
                      absl::StrFormat("signal %d, stopping", sig));
    agent.Stop();
  });
  waiter.detach();
  absl::Status s = agent.Run();
  if (!s.ok()) {
    gradsync::LogLine("gradsync-worker",
                      absl::StrFormat("%s", s.ToString().c_str()));
    return 1;
  }
  return 0;
}
