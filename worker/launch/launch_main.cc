// gradsync-launch: trains on one host with no coordinator, as
// `torchrun --standalone --nproc-per-node N train.py` does for PyTorch:
//   gradsync-launch --nproc-per-node 2 --dataset data/fashion_mnist
//       --eval-split test --model fashion_cnn --epochs 1 --batch-size 64
// The launcher starts N copies of itself (worker/launch/local_launcher.h);
// each copy sees RANK/LOCAL_RANK/WORLD_SIZE, meets the others through a
// FileStore in a fresh temporary directory and trains one rank
// (standalone_rank.h). Rank 0 prints progress; the exit code is 0 only when
// every rank finished.
#include <ATen/Parallel.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gradsync/config.h"
#include "loader/cached_dataset.h"
#include "worker/comm/devices.h"
#include "worker/launch/local_launcher.h"
#include "worker/launch/standalone_rank.h"
#include "worker/model/script_output.h"
#include "worker/train/compute_device.h"
#include "worker/train/compute_threads.h"
#include "worker/train/host_allocator.h"
#include "worker/train/host_tensor_limit.h"
#include "worker/train/loss.h"
#include "worker/train/precision.h"

namespace {

constexpr char kStoreEnv[] = "GRADSYNC_LAUNCH_STORE";

int EnvInt(const char* name) {
  int value = -1;
  const char* text = std::getenv(name);
  if (text == nullptr || !absl::SimpleAtoi(text, &value)) return -1;
  return value;
}

// "auto": nccl when this LibTorch has CUDA and there is a GPU per rank (as
// a DDP user picks nccl on GPU hosts), else gloo.
absl::StatusOr<gradsync::Backend> PickBackend(const std::string& name,
                                              int nproc) {
  if (name == "gloo") return gradsync::Backend::kGloo;
  if (name == "nccl") return gradsync::Backend::kNccl;
  if (name != "auto") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend must be auto, gloo or nccl (got '", name, "')"));
  }
  const int gpus = static_cast<int>(gradsync::DiscoverDevices().cuda.size());
  const bool cuda = gradsync::ComputeDevice(gradsync::Backend::kNccl, 0).ok();
  return GRADSYNC_WITH_NCCL && cuda && gpus >= nproc ? gradsync::Backend::kNccl
                                                     : gradsync::Backend::kGloo;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gradsync-launch: N local ranks, no coordinator (torchrun --standalone)"};
  gradsync::StandaloneRankOptions o;
  gradsync::TrainSpec& spec = o.spec;
  int nproc = 1;
  std::string backend = "auto", optimizer = "adam", compression = "none",
              precision = "32";
  double timeout_s = 60;
  bool no_shuffle = false;
  app.add_option("--nproc-per-node", nproc, "ranks to start (default 1)");
  app.add_option("--backend", backend, "auto|gloo|nccl (default auto)");
  app.add_option("--dataset", spec.dataset_path,
                 "image-folder root or synthetic:cifar10")
      ->required();
  app.add_option("--split", spec.split, "training split (default train)");
  app.add_option("--eval-split", spec.eval_split, "evaluation split");
  app.add_option("--channels", spec.channels, "0 as stored, 1 or 3");
  auto* model =
      app.add_option("--model", spec.model, "fashion_cnn|lenet|resnet18|mlp");
  auto* model_file = app.add_option(
      "--model-file", spec.model_file,
      "a TorchScript module (torch.jit.save), checked before it runs");
  model->excludes(model_file);
  model_file->excludes(model);
  std::string loss = "cross_entropy";
  app.add_option("--loss", loss,
                 "cross_entropy|nll|mse|bce_with_logits (default "
                 "cross_entropy; a model's own loss() wins)");
  app.add_option("--epochs", spec.epochs, "epochs (default 1)");
  app.add_option("--batch-size", spec.batch_size, "batch size per rank")
      ->required();
  app.add_option("--optimizer", optimizer, "adam|sgd (default adam)");
  app.add_option("--lr", spec.learning_rate, "learning rate (default 1e-3)");
  app.add_option("--momentum", spec.momentum, "sgd momentum");
  app.add_option("--weight-decay", spec.weight_decay, "weight decay");
  app.add_option("--seed", spec.seed, "sampler and init seed");
  app.add_flag("--no-shuffle", no_shuffle, "do not shuffle per epoch");
  app.add_flag("--drop-last", o.drop_last, "drop the uneven tail");
  app.add_option("--loader-threads", spec.loader_threads, "loader threads");
  app.add_option("--prefetch", spec.prefetch_depth, "batches per thread");
  app.add_option("--augmentation", spec.augmentation, "none|affine|crop_flip");
  app.add_option("--grad-accumulation", spec.grad_accumulation_steps,
                 "micro-batches per step");
  app.add_option("--compression", compression, "none|fp16|bf16 (gradients)");
  app.add_option("--precision", precision, "32|bf16-mixed|16-mixed");
  app.add_option("--bucket-cap-bytes", spec.bucket_cap_bytes,
                 "gradient bucket size");
  app.add_option("--checkpoint-dir", spec.checkpoint_directory,
                 "rank 0 writes checkpoints here");
  app.add_option("--checkpoint-interval", spec.checkpoint_interval_steps,
                 "steps between checkpoints (0: at the end)");
  app.add_option("--resume-from", spec.resume_from, "checkpoint to resume");
  app.add_option("--timeout", timeout_s,
                 "seconds for the rendezvous and each collective");
  double step_timeout_s = 600;
  app.add_option("--step-timeout", step_timeout_s,
                 "seconds the model may take over one step's forward and "
                 "backward; past it the rank exits naming the step (0: no "
                 "limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  int64_t memory_limit_mb = -1;
  app.add_option("--memory-limit-mb", memory_limit_mb,
                 "most memory each rank's CPU tensors may hold (0: no "
                 "limit); default 80% of the host's or container's memory "
                 "divided among the ranks");
  app.add_option("--log-every", o.log_every, "steps between progress lines");
  app.add_option("--metrics-out", o.metrics_out,
                 "rank 0 appends a JSON line per step here");
  std::string profile_steps;
  app.add_option("--profile-steps", profile_steps,
                 "A:B: record steps A to B with LibTorch's profiler");
  app.add_option("--profile-dir", o.profile_dir,
                 "where each rank writes rank<R>.ops.tsv (and .trace.json)");
  int64_t decoded_cache_mb = gradsync::DefaultDecodedCacheBytes() >> 20;
  app.add_option("--decoded-cache-mb", decoded_cache_mb,
                 "memory per rank for decoded images kept between epochs "
                 "(0: decode every epoch)")
      ->envname("GRADSYNC_DECODED_CACHE_MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (spec.model.empty() == spec.model_file.empty()) {
    std::cerr << "gradsync-launch: give --model or --model-file\n";
    return 2;
  }
  if (!spec.model_file.empty()) {
    spec.model = std::filesystem::path(spec.model_file).filename().string();
  }
  if (auto parsed = gradsync::ParseLoss(loss); parsed.ok()) {
    spec.loss = *parsed;
  } else {
    std::cerr << "gradsync-launch: --" << parsed.status().message() << "\n";
    return 2;
  }
  spec.dataset_access.decoded_cache =
      std::make_shared<gradsync::MemoryBudget>(decoded_cache_mb << 20);

  o.shuffle = !no_shuffle;
  o.timeout = absl::Seconds(timeout_s);
  spec.step_timeout = absl::Seconds(step_timeout_s);
  if (optimizer == "sgd") {
    spec.optimizer = gradsync::OptimizerKind::kSgd;
  } else if (optimizer != "adam") {
    std::cerr << "gradsync-launch: --optimizer must be adam or sgd\n";
    return 2;
  }
  if (compression == "fp16") {
    spec.compression = gradsync::WireCompression::kFp16;
  } else if (compression == "bf16") {
    spec.compression = gradsync::WireCompression::kBf16;
  } else if (compression != "none") {
    std::cerr << "gradsync-launch: --compression must be none, fp16 or bf16\n";
    return 2;
  }
  if (!profile_steps.empty()) {
    auto window = gradsync::ParseProfileSteps(profile_steps);
    if (!window.ok()) {
      std::cerr << "gradsync-launch: --" << window.status().message() << "\n";
      return 2;
    }
    o.profile = *window;
  }
  if (auto p = gradsync::ParsePrecision(precision); p.ok()) {
    spec.precision = *p;
  } else {
    std::cerr << "gradsync-launch: --" << p.status().message() << "\n";
    return 2;
  }
  spec.description =
      absl::StrCat("gradsync-launch ", spec.model, " on ", spec.dataset_path);
  // The ranks take the backend the launcher picked.
  if (const char* picked = std::getenv("GRADSYNC_LAUNCH_BACKEND")) {
    backend = picked;
  }
  auto picked = PickBackend(backend, nproc);
  if (!picked.ok()) {
    std::cerr << "gradsync-launch: " << picked.status().message() << "\n";
    return 2;
  }
  o.backend = *picked;

  if (const char* store = std::getenv(kStoreEnv); store != nullptr) {
    // A rank started by the launcher below.
    o.store_dir = store;
    o.rank = EnvInt("RANK");
    o.world_size = EnvInt("WORLD_SIZE");
    o.local_rank = EnvInt("LOCAL_RANK");
    if (o.rank < 0 || o.world_size < 1 || o.local_rank < 0) {
      std::cerr << "gradsync-launch: RANK, WORLD_SIZE and LOCAL_RANK must be "
                   "set for a rank\n";
      return 2;
    }
    if (const int threads = EnvInt("OMP_NUM_THREADS"); threads > 0) {
      gradsync::SetComputeThreads(threads);
    }
    gradsync::KeepFreedHostMemory();  // host_allocator.h
    gradsync::LimitHostTensorMemory(
        memory_limit_mb >= 0 ? memory_limit_mb << 20
                             : gradsync::DefaultHostTensorLimit(nproc));
    // A model file's prints and warnings, escaped, one line each.
    const int rank = o.rank;
    gradsync::RouteModelOutput([rank](const std::string& line) {
      std::cerr << "[rank " << rank << "] " << line << std::endl;
    });
    auto result = gradsync::RunStandaloneRank(o, std::cout);
    if (!result.ok()) {
      std::cerr << "[rank " << o.rank << "] " << result.status() << "\n";
      return 1;
    }
    if (o.rank == 0) {
      std::cout
          << "[rank 0] done: " << result->steps << " steps"
          << (result->accuracy >= 0 ? absl::StrCat(", test accuracy ",
                                                   100 * result->accuracy, "%")
                                    : "")
          << (result->checkpoint.empty() ? ""
                                         : ", checkpoint " + result->checkpoint)
          << (result->torchscript.empty()
                  ? ""
                  : ", trained module (TorchScript) " + result->torchscript)
          << std::endl;
    }
    return 0;
  }

  // The launcher: a fresh rendezvous directory, N ranks, supervision.
  std::string dir =
      (std::filesystem::temp_directory_path() / "gradsync-launch-XXXXXX")
          .string();
  if (mkdtemp(dir.data()) == nullptr) {
    std::cerr << "gradsync-launch: cannot create a rendezvous directory in "
              << std::filesystem::temp_directory_path() << "\n";
    return 1;
  }
  std::cout << "gradsync-launch: " << nproc << " rank(s), backend "
            << gradsync::BackendName(o.backend) << ", rendezvous " << dir
            << std::endl;
  gradsync::LocalLaunch launch;
  launch.program = "/proc/self/exe";
  launch.argv.assign(argv, argv + argc);
  launch.nproc = nproc;
  launch.env = {{kStoreEnv, dir},
                {"GRADSYNC_LAUNCH_BACKEND", gradsync::BackendName(o.backend)}};
  // As torchrun: ranks sharing a host get one compute thread each unless
  // the user says otherwise.
  if (nproc > 1 && std::getenv("OMP_NUM_THREADS") == nullptr) {
    std::cout << "gradsync-launch: OMP_NUM_THREADS=1 for each rank (set it "
                 "to use more compute threads per rank)"
              << std::endl;
    launch.env.emplace_back("OMP_NUM_THREADS", "1");
  }
  const absl::Status status = gradsync::LaunchLocalRanks(launch);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!status.ok()) {
    std::cerr << "gradsync-launch: " << status.message() << "\n";
    return 1;
  }
  std::cout << "gradsync-launch: " << nproc << " rank(s) finished" << std::endl;
  return 0;
}
