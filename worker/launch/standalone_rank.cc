#include "worker/launch/standalone_rank.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/store/file_store.h"
#include "loader/dataset.h"
#include "loader/sampler.h"

namespace gradsync {
namespace {

std::string StepJson(const StepReport& m) {
  return absl::StrFormat(
      "{\"rank\": %d, \"epoch\": %d, \"step\": %d, \"loss\": %.6f, "
      "\"samples_per_sec\": %.3f, \"data_wait_ms\": %.3f, \"compute_ms\": "
      "%.3f, \"forward_ms\": %.3f, \"backward_ms\": %.3f, "
      "\"optimizer_ms\": %.3f, \"allreduce_ms\": %.3f, "
      "\"allreduce_total_ms\": %.3f, \"step_ms\": %.3f, \"time_unix_ms\": "
      "%d, \"loss_scale\": %g, \"step_skipped\": %s}",
      m.rank, m.epoch, m.step, m.loss, m.samples_per_sec, m.data_wait_ms,
      m.compute_ms, m.forward_ms, m.backward_ms, m.optimizer_ms, m.allreduce_ms,
      m.allreduce_total_ms, m.step_ms, m.time_unix_ms, m.loss_scale,
      m.step_skipped ? "true" : "false");
}

absl::StatusOr<int64_t> CountSamples(const TrainSpec& spec,
                                     const std::string& split) {
  auto dataset = OpenDataset(spec.dataset_path, split, spec.channels);
  if (!dataset.ok()) return dataset.status();
  return (*dataset)->size();
}

}  // namespace

absl::StatusOr<TrainResult> RunStandaloneRank(const StandaloneRankOptions& o,
                                              std::ostream& log) {
  const std::string me = absl::StrCat("[rank ", o.rank, "] ");
  TrainContext c;
  c.spec = o.spec;
  c.rank = o.rank;
  c.world_size = o.world_size;
  c.cuda_device = o.local_rank;
  auto train_samples = CountSamples(o.spec, o.spec.split);
  if (!train_samples.ok()) return train_samples.status();
  c.train_samples = *train_samples;
  if (!o.spec.eval_split.empty()) {
    auto eval_samples = CountSamples(o.spec, o.spec.eval_split);
    if (!eval_samples.ok()) return eval_samples.status();
    c.eval_samples = *eval_samples;
  }
  if (o.profile.enabled()) {
    std::error_code error;
    std::filesystem::create_directories(o.profile_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot create the profile directory ", o.profile_dir,
                       ": ", error.message()));
    }
    c.profile = o.profile;
    c.profile.out_prefix =
        (std::filesystem::path(o.profile_dir) / absl::StrCat("rank", o.rank))
            .string();
  }
  // An nccl rank on a CPU-only LibTorch stops here, before any peer waits.
  if (auto device = ComputeDevice(o.backend, o.local_rank); !device.ok()) {
    return device.status();
  }
  CommOptions co;
  co.rank = o.rank;
  co.size = o.world_size;
  co.store = std::make_shared<FileStore>(o.store_dir);
  co.timeout = o.timeout;
  co.cuda_device = o.local_rank;
  auto comm = CreateCommunicator(o.backend, co);
  if (!comm.ok()) return comm.status();
  c.comm = comm->get();

  c.shard = [&o, &c](int epoch,
                     bool eval) -> absl::StatusOr<std::vector<int64_t>> {
    if (eval) return EvalShardIndices(c.eval_samples, o.world_size, o.rank);
    SamplerOptions so;
    so.dataset_size = c.train_samples;
    so.world_size = o.world_size;
    so.rank = o.rank;
    so.seed = o.spec.seed;
    so.epoch = epoch;
    so.shuffle = o.shuffle;
    so.drop_last = o.drop_last;
    return DistributedSamplerIndices(so);
  };
  std::unique_ptr<std::ofstream> metrics;
  if (o.rank == 0 && !o.metrics_out.empty()) {
    metrics = std::make_unique<std::ofstream>(o.metrics_out, std::ios::app);
    if (!*metrics) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write metrics to ", o.metrics_out));
    }
  }
  c.on_step = [&](const StepReport& m) {
    if (metrics) *metrics << StepJson(m) << "\n";
    if (o.rank != 0 || o.log_every <= 0 || m.step % o.log_every != 0) return;
    log << me
        << absl::StrFormat(
               "epoch %d step %d/%d loss %.4f %.0f samples/s per rank (data "
               "%.1f ms, compute %.1f ms, all-reduce %.1f ms exposed)",
               m.epoch + 1, m.step - int64_t{m.epoch} * m.steps_per_epoch,
               m.steps_per_epoch, m.loss, m.samples_per_sec, m.data_wait_ms,
               m.compute_ms, m.allreduce_ms)
        << std::endl;
  };
  c.on_eval = [&](const EvalReport& e) {
    log << me
        << absl::StrFormat("epoch %d: test accuracy %.2f%% (%d samples)",
                           e.epoch + 1, 100 * e.accuracy, e.samples)
        << std::endl;
  };
  c.on_checkpoint = [&](const CheckpointReport& r) {
    log << me << "checkpoint " << r.path << " (step " << r.step << ")"
        << std::endl;
  };
  c.metadata = {{"RANK", absl::StrCat(o.rank)},
                {"WORLD_SIZE", absl::StrCat(o.world_size)},
                {"LOCAL_RANK", absl::StrCat(o.local_rank)},
                {"launcher", "gradsync-launch (standalone)"}};
  return Train(c);
}

}  // namespace gradsync
