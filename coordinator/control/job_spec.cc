#include "coordinator/control/job_spec.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/wire/sha256.h"

namespace gradsync {
namespace {

// Per rank; DDP users rarely go past a few thousand.
constexpr int64_t kMaxBatchSize = 1 << 20;
constexpr int64_t kMaxSamplesInFlight = 1 << 24;

absl::Status Invalid(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("job_spec.", field, " ", what));
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A split is one folder name inside the data set: "train", not "../x" or
// "/etc" (which would escape the data roots through the join).
absl::Status CheckSplitName(const std::string& field, const std::string& name,
                            bool required) {
  if (name.empty()) {
    return required ? Invalid(field, "must not be empty") : absl::OkStatus();
  }
  const bool plain =
      name != "." && name != ".." && name.size() <= 255 &&
      std::none_of(name.begin(), name.end(), [](char c) {
        return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
      });
  if (!plain) {
    return Invalid(field, absl::StrCat("'", absl::CHexEscape(name),
                                       "' is not a folder name (no '/', '\\', "
                                       "'.', '..' or control characters)"));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& KnownModels() {
  static const std::vector<std::string> kModels = {"fashion_cnn", "lenet",
                                                   "resnet18", "mlp"};
  return kModels;
}

const std::vector<std::string>& KnownLosses() {
  // As worker/train/loss.h names them.
  static const std::vector<std::string> kLosses = {"cross_entropy", "nll",
                                                   "mse", "bce_with_logits"};
  return kLosses;
}

const std::vector<std::string>& KnownAugmentations() {
  static const std::vector<std::string> kPresets = {"none", "affine",
                                                    "crop_flip"};
  return kPresets;
}

void ApplyJobSpecDefaults(v1::JobSpec* spec) {
  if (spec->name().empty()) spec->set_name("job");
  if (spec->dataset().split().empty() && !spec->dataset().path().empty()) {
    spec->mutable_dataset()->set_split("train");
  }
  if (spec->epochs() == 0) spec->set_epochs(1);
  v1::OptimizerSpec* opt = spec->mutable_optimizer();
  if (opt->type() == v1::OPTIMIZER_TYPE_UNSPECIFIED) {
    opt->set_type(v1::OPTIMIZER_TYPE_ADAM);
  }
  if (opt->learning_rate() == 0) {
    opt->set_learning_rate(opt->type() == v1::OPTIMIZER_TYPE_SGD ? 0.01 : 1e-3);
  }
  if (!spec->has_shuffle()) spec->set_shuffle(true);
  if (spec->loader_threads() == 0) spec->set_loader_threads(2);
  if (spec->prefetch_depth() == 0) spec->set_prefetch_depth(2);
  if (spec->augmentation().empty()) spec->set_augmentation("none");
  if (spec->loss().empty()) spec->set_loss("cross_entropy");
  v1::WorldSize* world = spec->mutable_world_size();
  if (world->min_workers() == 0) world->set_min_workers(world->max_workers());
  if (spec->collective_timeout_ms() == 0) {
    spec->set_collective_timeout_ms(60000);
  }
  if (spec->step_timeout_ms() == 0) spec->set_step_timeout_ms(600000);
  if (spec->grad_accumulation_steps() == 0)
    spec->set_grad_accumulation_steps(1);
  // bucket_cap_bytes 0 stays: each rank picks by backend
  // (DefaultBucketCapBytes in worker/reducer/reducer.h).
  if (!spec->has_max_restarts()) spec->set_max_restarts(3);
  if (!spec->has_restart_wait_ms()) spec->set_restart_wait_ms(60000);
  if (spec->snapshot_keep_last() == 0) spec->set_snapshot_keep_last(3);
  if (!spec->has_snapshot_keep_best()) spec->set_snapshot_keep_best(true);
}

absl::Status ValidateJobSpec(const v1::JobSpec& spec, int max_world_size) {
  if (spec.dataset().path().empty()) {
    return Invalid("dataset.path",
                   "is required (an image-folder directory or "
                   "synthetic:<preset>)");
  }
  if (absl::Status s =
          CheckSplitName("dataset.split", spec.dataset().split(), true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSplitName("dataset.eval_split",
                                      spec.dataset().eval_split(), false);
      !s.ok()) {
    return s;
  }
  if (!spec.model_file_sha256().empty()) {
    // Whether the coordinator holds the file is the job service's check
    // (its model file store); here only the digest's form.
    if (!IsSha256Hex(spec.model_file_sha256())) {
      return Invalid("model_file_sha256",
                     "is not a SHA-256 (64 lower-case hex digits)");
    }
    if (spec.model().size() > 200) {
      return Invalid("model", "names the model file in at most 200 bytes");
    }
  } else {
    if (spec.model().empty()) {
      return Invalid("model",
                     absl::StrCat("is required (one of ",
                                  absl::StrJoin(KnownModels(), ", "), ")"));
    }
    if (!Contains(KnownModels(), spec.model())) {
      return Invalid("model",
                     absl::StrCat("'", spec.model(), "' is unknown (known: ",
                                  absl::StrJoin(KnownModels(), ", "), ")"));
    }
  }
  if (!Contains(KnownLosses(), spec.loss())) {
    return Invalid("loss",
                   absl::StrCat("'", absl::CHexEscape(spec.loss()),
                                "' is unknown (known: ",
                                absl::StrJoin(KnownLosses(), ", "), ")"));
  }
  // The sample ledger and the curve keep a record per epoch: bounded.
  constexpr int kMaxEpochs = 100000;
  if (spec.epochs() < 1 || spec.epochs() > kMaxEpochs) {
    return Invalid("epochs", absl::StrCat("must be in [1, ", kMaxEpochs,
                                          "] (got ", spec.epochs(), ")"));
  }
  if (spec.batch_size() < 1 || spec.batch_size() > kMaxBatchSize) {
    return Invalid("batch_size",
                   absl::StrCat("must be in [1, ", kMaxBatchSize,
                                "] per rank (got ", spec.batch_size(), ")"));
  }
  const v1::OptimizerSpec& opt = spec.optimizer();
  if (opt.type() != v1::OPTIMIZER_TYPE_SGD &&
      opt.type() != v1::OPTIMIZER_TYPE_ADAM) {
    return Invalid(
        "optimizer.type",
        absl::StrCat("is unknown (got ", static_cast<int>(opt.type()), ")"));
  }
  if (!(opt.learning_rate() > 0)) {
    return Invalid("optimizer.learning_rate",
                   absl::StrCat("must be > 0 (got ", opt.learning_rate(), ")"));
  }
  if (opt.momentum() < 0 || opt.momentum() >= 1) {
    return Invalid("optimizer.momentum", absl::StrCat("must be in [0, 1) (got ",
                                                      opt.momentum(), ")"));
  }
  if (opt.weight_decay() < 0) {
    return Invalid("optimizer.weight_decay",
                   absl::StrCat("must be >= 0 (got ", opt.weight_decay(), ")"));
  }
  if (spec.loader_threads() < 1 || spec.loader_threads() > 256) {
    return Invalid("loader_threads", absl::StrCat("must be in [1, 256] (got ",
                                                  spec.loader_threads(), ")"));
  }
  if (spec.prefetch_depth() < 1 || spec.prefetch_depth() > 64) {
    return Invalid("prefetch_depth", absl::StrCat("must be in [1, 64] (got ",
                                                  spec.prefetch_depth(), ")"));
  }
  // Every loader thread keeps prefetch_depth whole batches in memory.
  const int64_t in_flight = int64_t{spec.loader_threads()} *
                            spec.prefetch_depth() * spec.batch_size();
  if (in_flight > kMaxSamplesInFlight) {
    return Invalid("prefetch_depth",
                   absl::StrCat("x loader_threads x batch_size = ", in_flight,
                                " samples in flight, more than ",
                                kMaxSamplesInFlight, ": lower one of them"));
  }
  for (const auto& [field, value, limit] :
       {std::tuple<const char*, const std::string&, size_t>{"name", spec.name(),
                                                            256},
        {"dataset.path", spec.dataset().path(), 4096},
        {"checkpoint.directory", spec.checkpoint().directory(), 4096},
        {"checkpoint.resume_from", spec.checkpoint().resume_from(), 4096}}) {
    if (value.size() > limit) {
      return Invalid(field, absl::StrCat("is ", value.size(),
                                         " bytes long, more than ", limit));
    }
  }
  if (!Contains(KnownAugmentations(), spec.augmentation())) {
    return Invalid(
        "augmentation",
        absl::StrCat("'", spec.augmentation(), "' is unknown (known: ",
                     absl::StrJoin(KnownAugmentations(), ", "), ")"));
  }
  const v1::WorldSize& world = spec.world_size();
  if (world.max_workers() < 1) {
    return Invalid(
        "world_size.max_workers",
        absl::StrCat("must be >= 1 (got ", world.max_workers(), ")"));
  }
  if (world.min_workers() < 1) {
    return Invalid(
        "world_size.min_workers",
        absl::StrCat("must be >= 1 (got ", world.min_workers(), ")"));
  }
  if (world.min_workers() > world.max_workers()) {
    return Invalid("world_size.min_workers",
                   absl::StrCat("(", world.min_workers(),
                                ") must not exceed world_size.max_workers (",
                                world.max_workers(), ")"));
  }
  if (max_world_size > 0 && world.max_workers() > max_world_size) {
    return Invalid(
        "world_size.max_workers",
        absl::StrCat("must be <= ", max_world_size,
                     " on this coordinator (got ", world.max_workers(), ")"));
  }
  if (!v1::Backend_IsValid(spec.backend())) {
    return Invalid("backend", "is unknown");
  }
  if (spec.checkpoint().interval_steps() < 0) {
    return Invalid("checkpoint.interval_steps",
                   absl::StrCat("must be >= 0 (got ",
                                spec.checkpoint().interval_steps(), ")"));
  }
  if (spec.collective_timeout_ms() < 1) {
    return Invalid(
        "collective_timeout_ms",
        absl::StrCat("must be >= 1 (got ", spec.collective_timeout_ms(), ")"));
  }
  if (spec.step_timeout_ms() < 1) {
    return Invalid(
        "step_timeout_ms",
        absl::StrCat("must be >= 1 (got ", spec.step_timeout_ms(), ")"));
  }
  if (spec.grad_accumulation_steps() < 1) {
    return Invalid("grad_accumulation_steps",
                   absl::StrCat("must be >= 1 (got ",
                                spec.grad_accumulation_steps(), ")"));
  }
  if (!v1::GradientCompression_IsValid(spec.gradient_compression())) {
    return Invalid("gradient_compression", "is unknown");
  }
  if (!v1::Precision_IsValid(spec.precision())) {
    return Invalid("precision", "is unknown");
  }
  if (spec.precision() == v1::PRECISION_16_MIXED &&
      spec.backend() == v1::BACKEND_GLOO) {
    return Invalid("precision",
                   "16-mixed needs GPUs (float16 autocast with loss scaling "
                   "is a CUDA feature): use backend nccl or auto, or "
                   "bf16-mixed on CPUs");
  }
  if (spec.bucket_cap_bytes() != 0 && spec.bucket_cap_bytes() < 1024) {
    return Invalid("bucket_cap_bytes",
                   absl::StrCat("must be 0 (by backend) or >= 1024 (got ",
                                spec.bucket_cap_bytes(), ")"));
  }
  if (spec.snapshot_keep_last() < 1 || spec.snapshot_keep_last() > 1000) {
    return Invalid("snapshot_keep_last",
                   absl::StrCat("must be in [1, 1000] (got ",
                                spec.snapshot_keep_last(), ")"));
  }
  if (spec.restart_wait_ms() < 0 || spec.restart_wait_ms() > 86400000) {
    return Invalid("restart_wait_ms",
                   absl::StrCat("must be in [0, 86400000] (a day; got ",
                                spec.restart_wait_ms(), ")"));
  }
  if (spec.max_restarts() < 0 || spec.max_restarts() > 1000) {
    return Invalid("max_restarts", absl::StrCat("must be in [0, 1000] (got ",
                                                spec.max_restarts(), ")"));
  }
  if (spec.dataset().channels() != 0 && spec.dataset().channels() != 1 &&
      spec.dataset().channels() != 3) {
    return Invalid("dataset.channels",
                   absl::StrCat("must be 0, 1 or 3 (got ",
                                spec.dataset().channels(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
