#include "coordinator/cli/job_flags.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "coordinator/cli/job_file.h"
#include "foundation/data_index/synthetic_presets.h"

namespace gradsync::cli {
namespace {

// The enum value a flag names (case-insensitive), or INVALID_ARGUMENT
// listing the choices.
template <typename E>
absl::StatusOr<E> ParseChoice(
    const std::string& flag, const std::string& value,
    const std::vector<std::pair<std::string, E>>& choices) {
  const std::string lower = absl::AsciiStrToLower(value);
  std::vector<std::string> names;
  for (const auto& [name, e] : choices) {
    if (name == lower) return e;
    names.push_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      flag, " must be ", absl::StrJoin(names, ", "), " (got ", value, ")"));
}

}  // namespace

absl::StatusOr<v1::JobSpec> BuildJobSpec(const JobFlags& f) {
  v1::JobSpec spec;
  if (!f.file.empty()) {
    absl::StatusOr<v1::JobSpec> read = ReadJobFile(f.file);
    if (!read.ok()) return read.status();
    spec = std::move(*read);
  }
  if (f.name) spec.set_name(*f.name);
  if (f.dataset) spec.mutable_dataset()->set_path(*f.dataset);
  if (f.split) spec.mutable_dataset()->set_split(*f.split);
  if (f.eval_split) spec.mutable_dataset()->set_eval_split(*f.eval_split);
  if (f.channels) spec.mutable_dataset()->set_channels(*f.channels);
  if (f.model) spec.set_model(*f.model);
  if (f.epochs) spec.set_epochs(*f.epochs);
  if (f.batch_size) spec.set_batch_size(*f.batch_size);
  if (f.optimizer) {
    auto type = ParseChoice<v1::OptimizerType>(
        "--optimizer", *f.optimizer,
        {{"sgd", v1::OPTIMIZER_TYPE_SGD}, {"adam", v1::OPTIMIZER_TYPE_ADAM}});
    if (!type.ok()) return type.status();
    spec.mutable_optimizer()->set_type(*type);
  }
  if (f.lr) spec.mutable_optimizer()->set_learning_rate(*f.lr);
  if (f.momentum) spec.mutable_optimizer()->set_momentum(*f.momentum);
  if (f.weight_decay)
    spec.mutable_optimizer()->set_weight_decay(*f.weight_decay);
  if (f.seed) spec.set_seed(*f.seed);
  if (f.no_shuffle) spec.set_shuffle(false);
  if (f.drop_last) spec.set_drop_last(true);
  if (f.loader_threads) spec.set_loader_threads(*f.loader_threads);
  if (f.prefetch_depth) spec.set_prefetch_depth(*f.prefetch_depth);
  if (f.augmentation) spec.set_augmentation(*f.augmentation);
  if (f.workers) {
    spec.mutable_world_size()->set_min_workers(*f.workers);
    spec.mutable_world_size()->set_max_workers(*f.workers);
  }
  if (f.min_workers) spec.mutable_world_size()->set_min_workers(*f.min_workers);
  if (f.max_workers) spec.mutable_world_size()->set_max_workers(*f.max_workers);
  if (f.backend) {
    auto backend = ParseChoice<v1::Backend>("--backend", *f.backend,
                                            {{"auto", v1::BACKEND_AUTO},
                                             {"gloo", v1::BACKEND_GLOO},
                                             {"nccl", v1::BACKEND_NCCL}});
    if (!backend.ok()) return backend.status();
    spec.set_backend(*backend);
  }
  if (f.checkpoint_dir)
    spec.mutable_checkpoint()->set_directory(*f.checkpoint_dir);
  if (f.checkpoint_interval) {
    spec.mutable_checkpoint()->set_interval_steps(*f.checkpoint_interval);
  }
  if (f.resume_from) spec.mutable_checkpoint()->set_resume_from(*f.resume_from);
  if (f.resume_snapshot) {
    const std::vector<std::string> parts =
        absl::StrSplit(*f.resume_snapshot, ':');
    int64_t step = 0;
    if (parts.size() > 2 || parts[0].empty() ||
        (parts.size() == 2 &&
         (!absl::SimpleAtoi(parts[1], &step) || step <= 0))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--resume-snapshot wants JOB or JOB:STEP (STEP >= 1), got '",
          *f.resume_snapshot, "'"));
    }
    spec.mutable_checkpoint()->set_resume_snapshot_job(parts[0]);
    spec.mutable_checkpoint()->set_resume_snapshot_step(step);
  }
  if (f.grad_accumulation)
    spec.set_grad_accumulation_steps(*f.grad_accumulation);
  if (f.max_restarts) spec.set_max_restarts(*f.max_restarts);
  if (f.restart_wait_s) {
    spec.set_restart_wait_ms(static_cast<int64_t>(*f.restart_wait_s * 1000));
  }
  if (f.bucket_cap_bytes) spec.set_bucket_cap_bytes(*f.bucket_cap_bytes);
  if (f.compression) {
    auto compression = ParseChoice<v1::GradientCompression>(
        "--compression", *f.compression,
        {{"none", v1::GRADIENT_COMPRESSION_NONE},
         {"fp16", v1::GRADIENT_COMPRESSION_FP16},
         {"bf16", v1::GRADIENT_COMPRESSION_BF16}});
    if (!compression.ok()) return compression.status();
    spec.set_gradient_compression(*compression);
  }
  if (f.precision) {
    auto precision =
        ParseChoice<v1::Precision>("--precision", *f.precision,
                                   {{"32", v1::PRECISION_32},
                                    {"bf16-mixed", v1::PRECISION_BF16_MIXED},
                                    {"16-mixed", v1::PRECISION_16_MIXED}});
    if (!precision.ok()) return precision.status();
    spec.set_precision(*precision);
  }
  if (f.loss) spec.set_loss(*f.loss);
  if (f.collective_timeout_ms) {
    spec.set_collective_timeout_ms(*f.collective_timeout_ms);
  }
  if (f.step_timeout_ms) spec.set_step_timeout_ms(*f.step_timeout_ms);
  // What a job needs and has no default, named as the user types it (the
  // coordinator would name the JobSpec field and say "got 0"). A value
  // given, even a bad one, is the coordinator's to judge.
  std::vector<std::string> missing, fields;
  auto need = [&](bool absent, const char* flag, const char* field) {
    if (!absent) return;
    missing.push_back(flag);
    fields.push_back(field);
  };
  need(spec.dataset().path().empty(), "--dataset", "dataset.path");
  need(
      spec.model().empty() && !f.model_file && spec.model_file_sha256().empty(),
      "--model or --model-file", "model");
  need(!f.batch_size && spec.batch_size() == 0, "--batch-size", "batch_size");
  need(!f.workers && !f.max_workers && spec.world_size().max_workers() == 0,
       "--workers (-n)", "world_size.max_workers");
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        absl::StrJoin(missing, ", "), missing.size() == 1 ? " is" : " are",
        " required (or, in a job file, ", absl::StrJoin(fields, ", "), ")"));
  }
  // A relative data set path means "relative to where the CLI runs", as
  // users expect (the coordinator lists it there); a synthetic data set is
  // a name, not a path. Relative checkpoint paths stay relative: each
  // worker takes them under its own --checkpoint-root.
  std::string& path = *spec.mutable_dataset()->mutable_path();
  if (!path.empty() && path[0] != '/' && !IsSyntheticPath(path)) {
    std::error_code ec;
    path = std::filesystem::absolute(path, ec).lexically_normal().string();
  }
  return spec;
}

}  // namespace gradsync::cli
