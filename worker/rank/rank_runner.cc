#include "worker/rank/rank_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "foundation/data_index/sampler.h"
#include "loader/open_dataset.h"
#include "worker/comm/create_communicator.h"
#include "worker/train/compute_device.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

// Opens `split` once: its size is the count, and the trainer trains on it.
absl::Status CountSplit(const TrainSpec& spec, const std::string& split,
                        int64_t* count,
                        std::shared_ptr<const Dataset>* dataset) {
  absl::StatusOr<std::shared_ptr<const Dataset>> opened =
      OpenDataset(spec.dataset_path, split, spec.channels, spec.dataset_access);
  if (!opened.ok()) return opened.status();
  *dataset = std::move(*opened);
  *count = (*dataset)->size();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainResult> RunRank(
    const RankSetup& setup, TrainContext c,
    std::unique_ptr<Communicator>* communicator) {
  auto log = [&setup](const std::string& line) {
    if (setup.log) setup.log(absl::StrCat(setup.log_prefix, " ", line));
  };
  // An nccl rank on a CPU-only LibTorch stops here, before any peer waits.
  if (auto device = ComputeDevice(setup.backend, c.cuda_device); !device.ok()) {
    return device.status();
  }
  if (setup.local_sharding) {
    if (absl::Status s =
            CountSplit(c.spec, c.spec.split, &c.train_samples, &c.train_set);
        !s.ok()) {
      return s;
    }
    if (!c.spec.eval_split.empty()) {
      if (absl::Status s = CountSplit(c.spec, c.spec.eval_split,
                                      &c.eval_samples, &c.eval_set);
          !s.ok()) {
        return s;
      }
    }
    c.shard = [&c, local = *setup.local_sharding](
                  int epoch,
                  bool eval) -> absl::StatusOr<std::vector<int64_t>> {
      if (eval) return EvalShardIndices(c.eval_samples, c.world_size, c.rank);
      SamplerOptions so;
      so.dataset_size = c.train_samples;
      so.world_size = c.world_size;
      so.rank = c.rank;
      so.seed = c.spec.seed;
      so.epoch = epoch;
      so.shuffle = local.shuffle;
      so.drop_last = local.drop_last;
      return DistributedSamplerIndices(so);
    };
  }
  CommOptions co;
  co.rank = c.rank;
  co.size = c.world_size;
  co.store = setup.store;
  co.timeout = setup.timeout;
  co.cuda_device = c.cuda_device;
  if (!setup.hostname.empty()) co.hostname = setup.hostname;
  absl::StatusOr<std::unique_ptr<Communicator>> created =
      CreateCommunicator(setup.backend, co);
  if (!created.ok()) return created.status();
  *communicator = std::move(*created);
  c.comm = communicator->get();
  if (setup.on_connected) setup.on_connected(c.comm);
  log(absl::StrFormat("is one of %d ranks: %s", c.world_size,
                      c.comm->transport()));

  c.metadata["RANK"] = absl::StrCat(c.rank);
  c.metadata["WORLD_SIZE"] = absl::StrCat(c.world_size);
  c.metadata["LOCAL_RANK"] = absl::StrCat(setup.local_rank);
  c.on_step = [&log, every = setup.log_every,
               next = std::move(c.on_step)](const StepReport& m) {
    if (next) next(m);
    if (every <= 0 || m.step % every != 0) return;
    log(absl::StrFormat(
        "epoch %d step %d/%d loss %.4f %.0f samples/s per rank (data %.1f ms, "
        "compute %.1f ms, all-reduce %.1f ms exposed)",
        m.epoch + 1, m.step - int64_t{m.epoch} * m.steps_per_epoch,
        m.steps_per_epoch, m.loss, m.samples_per_sec, m.data_wait_ms,
        m.compute_ms, m.allreduce_ms));
  };
  c.on_eval = [&log, next = std::move(c.on_eval)](const EvalReport& e) {
    if (next) next(e);
    log(absl::StrFormat("epoch %d: test accuracy %.2f%% (%d samples)",
                        e.epoch + 1, 100 * e.accuracy, e.samples));
  };
  c.on_checkpoint = [&log, next = std::move(c.on_checkpoint)](
                        const CheckpointReport& r) {
    if (next) next(r);
    // Epochs counted from 1, as everything a person reads counts them.
    log(absl::StrFormat("checkpoint %s (step %d) commits %s", r.path, r.step,
                        r.epoch_batch == 0
                            ? absl::StrFormat("epoch %d to its end", r.epoch)
                            : absl::StrFormat("epoch %d through batch %d",
                                              r.epoch + 1, r.epoch_batch)));
  };
  return Train(c);
}

}  // namespace gradsync
