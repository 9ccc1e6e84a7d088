#include "coordinator/cli/command_line.h"

#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/job_spec.h"
#include "gradsync/config.h"

namespace gradsync::cli {
namespace {

constexpr char kExamples[] = R"(Examples:
  gradsync submit --dataset /data/fashion-mnist --model fashion_cnn \
      --epochs 2 --workers 2 --watch
  gradsync list -c coordinator:50051
  gradsync status job-000001 --json
  gradsync watch job-000001
  gradsync model pull job-000001 -o model.pt
  gradsync plot job-000001 -o curves.png
  gradsync logs job-000001 --rank 1 -f
  source <(gradsync completion bash)
Global flags (--coordinator, --json, --timeout, --token, --tls-*) go
before or after the subcommand.)";

constexpr char kSubmitExamples[] = R"(Examples:
  gradsync submit --dataset data/fashion-mnist --eval-split test \
      --model fashion_cnn --batch-size 100 --workers 2 --epochs 2
  JOB=$(gradsync submit -q --file job.json --epochs 5)   # flags override the file
A job file is the JSON form of gradsync.v1.JobSpec (README, "Job files").)";

// The flags of `app` itself (long and short names), positionals left out.
std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

}  // namespace

CommandLine::CommandLine()
    : app_("gradsync: submit and watch distributed training jobs"),
      token_(app_, "token", "GRADSYNC_TOKEN",
             "user token, when the coordinator needs one", "user",
             "user-token"),
      tls_(app_) {
  app_.set_version_flag("--version", GRADSYNC_VERSION);
  app_.require_subcommand(1);
  // Inherited by the subcommands added below: flags of the top level
  // given after a subcommand fall through to it.
  app_.fallthrough();
  app_.footer(kExamples);
  app_.add_option("--coordinator,-c", coordinator, "coordinator host:port")
      ->envname("GRADSYNC_COORDINATOR")
      ->capture_default_str();
  app_.add_flag("--json", options.json, "machine-readable JSON output");
  app_.add_option("--timeout", options.timeout_s, "seconds per request")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  CLI::App* submit = app_.add_subcommand("submit", "submit a training job");
  JobFlags& f = job;
  // The defaults the coordinator applies, as it applies them.
  v1::JobSpec d;
  d.mutable_dataset()->set_path("x");
  ApplyJobSpecDefaults(&d);
  v1::JobSpec sgd;
  sgd.mutable_optimizer()->set_type(v1::OPTIMIZER_TYPE_SGD);
  ApplyJobSpecDefaults(&sgd);
  auto dflt = [](auto value) { return absl::StrCat(" (default ", value, ")"); };
  submit->add_option("--file,-f", f.file,
                     "job file (JSON JobSpec); flags override it, and "
                     "(required) flags it gives are not needed");
  submit->add_option("--name", f.name, "job name" + dflt(d.name()));
  submit->add_option("--dataset", f.dataset,
                     "image-folder data set root, or synthetic:<preset> "
                     "(required)");
  submit->add_option("--split", f.split,
                     "training split" + dflt(d.dataset().split()));
  submit->add_option("--eval-split", f.eval_split, "evaluation split");
  submit->add_option("--channels", f.channels, "0 as stored, 1 or 3");
  submit->add_option(
      "--model", f.model,
      absl::StrJoin(KnownModels(), "|") + " (required, unless --model-file)");
  submit->add_option("--model-file", f.model_file,
                     "train your own TorchScript module (torch.jit.save): "
                     "uploaded to the coordinator, checked by the workers "
                     "before it runs");
  submit->add_option("--loss", f.loss,
                     absl::StrJoin(KnownLosses(), "|") + dflt(d.loss()) +
                         "; a model file's own loss() wins");
  submit->add_option("--epochs", f.epochs, "epochs" + dflt(d.epochs()));
  submit->add_option("--batch-size", f.batch_size,
                     "batch size per rank (required)");
  submit->add_option(
      "--optimizer", f.optimizer,
      "adam|sgd" + dflt(d.optimizer().type() == v1::OPTIMIZER_TYPE_SGD
                            ? "sgd"
                            : "adam"));
  submit->add_option(
      "--lr", f.lr,
      absl::StrCat("learning rate (default ", d.optimizer().learning_rate(),
                   " adam, ", sgd.optimizer().learning_rate(), " sgd)"));
  submit->add_option("--momentum", f.momentum, "sgd momentum");
  submit->add_option("--weight-decay", f.weight_decay, "weight decay");
  submit->add_option("--seed", f.seed,
                     "sampler and init seed" + dflt(d.seed()));
  submit->add_flag("--no-shuffle", f.no_shuffle, "do not shuffle per epoch");
  submit->add_flag("--drop-last", f.drop_last, "drop the uneven tail");
  submit->add_option("--loader-threads", f.loader_threads,
                     "loader threads" + dflt(d.loader_threads()));
  submit->add_option("--prefetch", f.prefetch_depth,
                     "batches per thread" + dflt(d.prefetch_depth()));
  submit->add_option(
      "--augmentation", f.augmentation,
      absl::StrJoin(KnownAugmentations(), "|") + dflt(d.augmentation()));
  submit->add_option("--workers,-n", f.workers,
                     "exact world size (required, or --max-workers)");
  submit->add_option("--min-workers", f.min_workers, "smallest world size");
  submit->add_option("--max-workers", f.max_workers, "largest world size");
  submit->add_option("--backend", f.backend, "auto|gloo|nccl (default auto)");
  submit->add_option("--checkpoint-dir", f.checkpoint_dir,
                     "checkpoint directory, relative ones under each "
                     "worker's --checkpoint-root (default: none; the final "
                     "weights are kept by the coordinator either way)");
  submit->add_option("--checkpoint-interval", f.checkpoint_interval,
                     "steps between checkpoints");
  submit->add_option("--resume-from", f.resume_from,
                     "start from this checkpoint file, or a directory's "
                     "latest");
  submit->add_option("--resume-snapshot", f.resume_snapshot,
                     "start from another job's snapshot kept by the "
                     "coordinator: JOB (its latest) or JOB:STEP");
  submit->add_option(
      "--collective-timeout-ms", f.collective_timeout_ms,
      "deadline of each collective" + dflt(d.collective_timeout_ms()));
  submit->add_option("--step-timeout-ms", f.step_timeout_ms,
                     "longest the model may take over one step's forward and "
                     "backward; past it the rank's worker reports the step "
                     "and exits for its supervisor to restart" +
                         dflt(d.step_timeout_ms()));
  submit->add_option("--grad-accumulation", f.grad_accumulation,
                     "batches per synchronised optimizer step" +
                         dflt(d.grad_accumulation_steps()));
  submit->add_option("--compression", f.compression,
                     "gradient all-reduce: none|fp16|bf16 (default none)");
  submit->add_option("--precision", f.precision,
                     "32|bf16-mixed|16-mixed (default 32; 16-mixed: GPUs "
                     "only)");
  submit->add_option("--max-restarts", f.max_restarts,
                     absl::StrCat("new rendezvous after a failure, at most "
                                  "this often (default ",
                                  d.max_restarts(), "; 0 = fail at once)"));
  submit->add_option(
      "--restart-wait", f.restart_wait_s,
      absl::StrCat("seconds a restart waits for replacement workers when "
                   "too few remain (default ",
                   d.restart_wait_ms() / 1000, "; 0 = fail at once)"));
  submit->add_option("--bucket-cap-bytes", f.bucket_cap_bytes,
                     "gradient bucket size (default: 25 MiB on nccl, "
                     "4 MiB on gloo)");
  submit->add_flag("--watch,-w", watch_after_submit, "watch after submitting");
  submit->add_flag("--quiet,-q", quiet_submit,
                   "print only the job id (JOB=$(gradsync submit -q ...))");

  CLI::App* status = app_.add_subcommand("status", "show one job");
  status->add_option("job", job_id, "job id")->required();
  CLI::App* list = app_.add_subcommand("list", "list jobs, newest first");
  list->add_option("--limit", limit, "at most this many (default: all)")
      ->check(CLI::NonNegativeNumber);
  list->add_flag("--quiet,-q", quiet_list, "print only the job ids");
  CLI::App* watch = app_.add_subcommand("watch", "follow a job live");
  watch->add_option("job", job_id, "job id")->required();
  CLI::App* cancel = app_.add_subcommand("cancel", "cancel a job");
  cancel->add_option("job", job_id, "job id")->required();
  cancel->add_option("--reason", reason, "recorded with the transition");
  CLI::App* del = app_.add_subcommand(
      "delete", "forget a finished job: its record, events and snapshots");
  del->add_option("job", job_id, "job id")->required();
  CLI::App* workers = app_.add_subcommand("workers", "list workers");
  workers
      ->add_option("--wait", workers_wait,
                   "first wait (up to --timeout seconds) until N live "
                   "workers are registered, also for a coordinator still "
                   "starting")
      ->check(CLI::Range(1, 100000));
  CLI::App* model = app_.add_subcommand(
      "model", "model snapshots of a job, and uploaded model files");
  model->require_subcommand(1);
  CLI::App* model_list =
      model->add_subcommand("list", "list a job's snapshots");
  model_list->add_option("job", job_id, "job id")->required();
  CLI::App* model_pull =
      model->add_subcommand("pull", "download a snapshot (a .pt file)");
  model_pull->add_option("job", job_id, "job id")->required();
  model_pull->add_option("--step", model_step, "step (default: latest)")
      ->each([this](const std::string&) { model_step_given = true; });
  model_pull->add_option("-o,--output", model_out, "file to write")->required();
  model_pull
      ->add_option("--format", model_format,
                   "checkpoint (default: the whole snapshot), state-dict (as "
                   "--state-dict), or torchscript (the trained module of a "
                   "job that trained a model file)")
      ->check(CLI::IsMember({"checkpoint", "state-dict", "torchscript"}));
  model_pull->add_flag(
      "--state-dict", model_state_dict,
      "write only the model's state_dict (name -> tensor), which "
      "torch.load(f, weights_only=True) opens on PyTorch 1.13 and 2.x");
  CLI::App* model_files = model->add_subcommand(
      "files", "list the model files the coordinator keeps");
  CLI::App* model_files_delete =
      model_files->add_subcommand("delete", "delete a model file no job uses");
  model_files_delete->add_option("sha256", model_file_sha256, "its digest")
      ->required();
  CLI::App* plot = app_.add_subcommand(
      "plot", "draw a job's loss, samples/s and accuracy curves");
  plot->add_option("job", job_id, "job id")->required();
  plot->add_option("-o,--output", plot_out,
                   "FILE.png, FILE.csv, or - (CSV on standard output); "
                   "without it, --json prints the points");
  CLI::App* logs = app_.add_subcommand(
      "logs", "print the log lines of a job's ranks (every attempt)");
  logs->add_option("job", job_id, "job id")->required();
  logs->add_option("--rank,-r", log_rank, "only this rank")
      ->check(CLI::NonNegativeNumber);
  logs->add_flag("--follow,-f", follow,
                 "keep printing new lines until the "
                 "job ends");
  CLI::App* completion =
      app_.add_subcommand("completion", "print a shell completion script");
  completion->add_option("shell", shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  // Run by gradsync-data (main.cc hands them over before parsing); listed
  // here so that --help and completion show them.
  app_.add_subcommand("data",
                      "data sets: fetch, make-lfw, to-shards (gradsync "
                      "data --help)");
  app_.add_subcommand("loader-bench",
                      "time the loader on an image folder (gradsync "
                      "loader-bench --help)");
  // The examples are the top level's; a subcommand's help is its own.
  std::function<void(CLI::App&)> own_help = [&](CLI::App& app) {
    for (CLI::App* sub :
         app.get_subcommands([](const CLI::App*) { return true; })) {
      sub->footer("");
      own_help(*sub);
    }
  };
  own_help(app_);
  submit->footer(kSubmitExamples);
}

std::optional<int> CommandLine::Parse(int argc, const char* const* argv,
                                      std::ostream& out, std::ostream& err) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A word that names no subcommand: say so (CLI11 would only say that a
    // subcommand is required).
    if (command().empty() && !app_.remaining().empty() &&
        app_.remaining().front().rfind('-', 0) != 0) {
      std::vector<std::string> names;
      for (const CLI::App* sub :
           app_.get_subcommands([](const CLI::App*) { return true; })) {
        names.push_back(sub->get_name());
      }
      err << "gradsync: unknown command '" << app_.remaining().front()
          << "' (commands: " << absl::StrJoin(names, ", ")
          << "; see gradsync --help)\n";
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    }
    return app_.exit(e, out, err);
  }
  return std::nullopt;
}

std::string CommandLine::command() const {
  std::vector<std::string> path;
  const CLI::App* app = &app_;
  while (true) {
    std::vector<CLI::App*> parsed = app->get_subcommands();
    if (parsed.empty()) break;
    app = parsed.front();
    path.push_back(app->get_name());
  }
  return absl::StrJoin(path, " ");
}

std::string CommandLine::ZshCompletion() const {
  return absl::StrCat(
      "# zsh completion for gradsync, generated by `gradsync completion "
      "zsh`:\n"
      "# the bash completion, through zsh's bashcompinit.\n"
      "autoload -U +X compinit && compinit\n"
      "autoload -U +X bashcompinit && bashcompinit\n",
      BashCompletion());
}

std::string CommandLine::BashCompletion() const {
  const std::vector<std::string> global = FlagNames(app_);
  std::vector<std::string> job_paths;  // commands that take a job id
  // For each command path ("" first), the words that may follow it.
  std::vector<std::pair<std::string, std::vector<std::string>>> words;
  std::function<void(const CLI::App&, const std::string&)> walk =
      [&](const CLI::App& app, const std::string& path) {
        std::vector<std::string> next;
        std::vector<std::pair<const CLI::App*, std::string>> children;
        for (const CLI::App* sub :
             app.get_subcommands([](const CLI::App*) { return true; })) {
          next.push_back(sub->get_name());
          children.emplace_back(
              sub, path.empty() ? sub->get_name()
                                : absl::StrCat(path, " ", sub->get_name()));
        }
        if (!path.empty()) {
          for (std::string& f : FlagNames(app)) next.push_back(std::move(f));
        }
        if (app.get_option_no_throw("job") != nullptr) {
          job_paths.push_back(absl::StrCat("\"", path, "\""));
        }
        next.insert(next.end(), global.begin(), global.end());
        words.emplace_back(path, std::move(next));
        for (const auto& [sub, sub_path] : children) walk(*sub, sub_path);
      };
  walk(app_, "");

  std::vector<std::string> paths, cases;
  for (const auto& [path, next] : words) {
    if (!path.empty()) paths.push_back(absl::StrCat("\"", path, "\""));
    cases.push_back(absl::StrCat("    \"", path, "\") words=\"",
                                 absl::StrJoin(next, " "), "\" ;;"));
  }
  return absl::StrCat(
      "# bash completion for gradsync, generated by `gradsync completion "
      "bash`.\n"
      "# Load it with: source <(gradsync completion bash)\n"
      "_gradsync() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} path=\"\" next words i\n"
      "  local prev=${COMP_WORDS[COMP_CWORD-1]}\n"
      "  # A flag's values.\n"
      "  case \"$prev\" in\n"
      "    --model) words=\"",
      absl::StrJoin(KnownModels(), " "),
      "\" ;;\n"
      "    --optimizer) words=\"adam sgd\" ;;\n"
      "    --backend) words=\"auto gloo nccl\" ;;\n"
      "    --precision) words=\"32 bf16-mixed 16-mixed\" ;;\n"
      "    --compression) words=\"none fp16 bf16\" ;;\n"
      "  esac\n"
      "  if [[ -n $words ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    next=\"${path:+$path }${COMP_WORDS[i]}\"\n"
      "    case \"$next\" in\n"
      "      ",
      absl::StrJoin(paths, "|"),
      ") path=\"$next\" ;;\n"
      "    esac\n"
      "  done\n"
      "  case \"$path\" in\n",
      absl::StrJoin(cases, "\n"),
      "\n"
      "  esac\n"
      "  # A job id: the coordinator's jobs (what `gradsync list -q` prints).\n"
      "  case \"$path\" in\n"
      "    ",
      absl::StrJoin(job_paths, "|"),
      ")\n"
      "      if [[ $cur != -* ]]; then\n"
      "        words=\"$words $(\"${COMP_WORDS[0]}\" --timeout 2 list -q "
      "2>/dev/null)\"\n"
      "      fi ;;\n"
      "  esac\n"
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      "}\n"
      "complete -F _gradsync gradsync\n");
}

}  // namespace gradsync::cli
