// gradsync: the command-line client of the coordinator's JobService, and
// the entry point of the data tools (`gradsync data`, `gradsync loader-bench`).
#include <limits.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "coordinator/cli/commands.h"
#include "coordinator/client/tls_flags.h"
#include "coordinator/client/token_flags.h"
#include "gradsync/config.h"

namespace {

// `gradsync data ...` and `gradsync loader-bench ...` run the data tools
// program installed beside this one (they link OpenCV and LibTorch, which
// the control-plane CLI does not need).
int RunDataTool(int argc, char** argv) {
  std::string self(PATH_MAX, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string tool = "gradsync-data";
  if (n > 0) {
    self.resize(n);
    const std::string beside = self.substr(0, self.rfind('/') + 1) + tool;
    if (access(beside.c_str(), X_OK) == 0) tool = beside;
  }
  std::vector<char*> args = {tool.data()};
  // "data fetch ..." -> "fetch ..."; "loader-bench ..." stays.
  for (int i = std::string(argv[1]) == "data" ? 2 : 1; i < argc; ++i) {
    args.push_back(argv[i]);
  }
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::cerr << "gradsync: cannot run " << tool << ": " << std::strerror(errno)
            << "\n";
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "data" ||
                   std::string(argv[1]) == "loader-bench")) {
    return RunDataTool(argc, argv);
  }
  CLI::App app{"gradsync: submit and watch distributed training jobs"};
  app.set_version_flag("--version", GRADSYNC_VERSION);
  app.require_subcommand(1);
  std::string coordinator = "localhost:50051";
  gradsync::cli::CliOptions options;
  app.add_option("--coordinator,-c", coordinator, "coordinator host:port")
      ->envname("GRADSYNC_COORDINATOR")
      ->capture_default_str();
  gradsync::TokenFlags token(app, "token", "GRADSYNC_TOKEN",
                             "user token, when the coordinator needs one",
                             "user", "user-token");
  gradsync::ClientTlsFlags tls(app);
  app.add_flag("--json", options.json, "machine-readable JSON output");
  app.add_option("--timeout", options.timeout_s, "seconds per request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  gradsync::cli::JobFlags f;
  bool watch_after_submit = false;
  CLI::App* submit = app.add_subcommand("submit", "submit a training job");
  submit->add_option("--file,-f", f.file, "job file (JSON JobSpec)");
  submit->add_option("--name", f.name, "job name");
  submit->add_option("--dataset", f.dataset, "image-folder data set root");
  submit->add_option("--split", f.split, "training split (default train)");
  submit->add_option("--eval-split", f.eval_split, "evaluation split");
  submit->add_option("--channels", f.channels, "0 as stored, 1 or 3");
  submit->add_option("--model", f.model, "fashion_cnn|lenet|resnet18|mlp");
  submit->add_option("--epochs", f.epochs, "epochs (default 1)");
  submit->add_option("--batch-size", f.batch_size, "batch size per rank");
  submit->add_option("--optimizer", f.optimizer, "adam|sgd (default adam)");
  submit->add_option("--lr", f.lr, "learning rate");
  submit->add_option("--momentum", f.momentum, "sgd momentum");
  submit->add_option("--weight-decay", f.weight_decay, "weight decay");
  submit->add_option("--seed", f.seed, "sampler and init seed");
  submit->add_flag("--no-shuffle", f.no_shuffle, "do not shuffle per epoch");
  submit->add_flag("--drop-last", f.drop_last, "drop the uneven tail");
  submit->add_option("--loader-threads", f.loader_threads, "loader threads");
  submit->add_option("--prefetch", f.prefetch_depth, "batches per thread");
  submit->add_option("--augmentation", f.augmentation, "none|affine|crop_flip");
  submit->add_option("--workers,-n", f.workers, "exact world size");
  submit->add_option("--min-workers", f.min_workers, "smallest world size");
  submit->add_option("--max-workers", f.max_workers, "largest world size");
  submit->add_option("--backend", f.backend, "auto|gloo|nccl");
  submit->add_option("--checkpoint-dir", f.checkpoint_dir, "checkpoints");
  submit->add_option("--checkpoint-interval", f.checkpoint_interval,
                     "steps between checkpoints");
  submit->add_option("--resume-from", f.resume_from,
                     "start from this checkpoint file, or a directory's "
                     "latest");
  submit->add_option("--resume-snapshot", f.resume_snapshot,
                     "start from another job's snapshot kept by the "
                     "coordinator: JOB (its latest) or JOB:STEP");
  submit->add_option("--collective-timeout-ms", f.collective_timeout_ms,
                     "deadline of each collective");
  submit->add_option("--grad-accumulation", f.grad_accumulation,
                     "batches per synchronised optimizer step");
  submit->add_option("--compression", f.compression,
                     "gradient all-reduce: none|fp16|bf16");
  submit->add_option("--precision", f.precision,
                     "32|bf16-mixed|16-mixed (16-mixed: GPUs only)");
  submit->add_option("--max-restarts", f.max_restarts,
                     "new rendezvous after a failure, at most this often "
                     "(default 3; 0 = fail at once)");
  submit->add_option("--bucket-cap-bytes", f.bucket_cap_bytes,
                     "gradient bucket size (default: 25 MiB on nccl, "
                     "4 MiB on gloo)");
  submit->add_flag("--watch,-w", watch_after_submit, "watch after submitting");

  std::string job_id;
  CLI::App* status = app.add_subcommand("status", "show one job");
  status->add_option("job", job_id, "job id")->required();
  int limit = 0;
  CLI::App* list = app.add_subcommand("list", "list jobs, newest first");
  list->add_option("--limit", limit, "at most this many (default: all)")
      ->check(CLI::NonNegativeNumber);
  CLI::App* watch = app.add_subcommand("watch", "follow a job live");
  watch->add_option("job", job_id, "job id")->required();
  std::string reason;
  CLI::App* cancel = app.add_subcommand("cancel", "cancel a job");
  cancel->add_option("job", job_id, "job id")->required();
  cancel->add_option("--reason", reason, "recorded with the transition");
  CLI::App* del = app.add_subcommand(
      "delete", "forget a finished job: its record, events and snapshots");
  del->add_option("job", job_id, "job id")->required();
  CLI::App* workers = app.add_subcommand("workers", "list workers");
  CLI::App* model = app.add_subcommand("model", "model snapshots of a job");
  model->require_subcommand(1);
  CLI::App* model_list =
      model->add_subcommand("list", "list a job's snapshots");
  model_list->add_option("job", job_id, "job id")->required();
  int64_t model_step = -1;
  std::string model_out;
  CLI::App* model_pull =
      model->add_subcommand("pull", "download a snapshot (a .pt file)");
  model_pull->add_option("job", job_id, "job id")->required();
  CLI::Option* step_option =
      model_pull->add_option("--step", model_step, "step (default: latest)");
  model_pull->add_option("-o,--output", model_out, "file to write")->required();

  CLI11_PARSE(app, argc, argv);
  options.live = isatty(STDOUT_FILENO) != 0 && !options.json;

  absl::StatusOr<std::string> user_token = token.Load();
  if (!user_token.ok()) {
    std::cerr << "gradsync: " << user_token.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<gradsync::ClientTls> client_tls = tls.Load();
  if (!client_tls.ok()) {
    std::cerr << "gradsync: " << client_tls.status().message() << "\n";
    return 2;
  }
  gradsync::cli::Cli cli(
      gradsync::cli::MakeJobStub(coordinator, *user_token, *client_tls),
      options, std::cout, std::cerr);
  if (*submit) return cli.Submit(f, watch_after_submit);
  if (*status) return cli.Status(job_id);
  if (*list) return cli.List(limit);
  if (*watch) return cli.Watch(job_id);
  if (*cancel) return cli.Cancel(job_id, reason);
  if (*del) return cli.Delete(job_id);
  if (*workers) return cli.Workers();
  if (*model_list) return cli.ModelList(job_id);
  if (*model_pull) {
    return cli.ModelPull(job_id, model_step, step_option->count() > 0,
                         model_out);
  }
  return 2;
}
