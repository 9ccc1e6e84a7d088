#include "worker/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "loader/batch_loader.h"
#include "loader/image_folder_index.h"
#include "worker/checkpoint.h"
#include "worker/models.h"
#include "worker/reducer.h"

namespace gradsync {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

absl::StatusOr<std::shared_ptr<ImageFolderDataset>> OpenSplit(
    const v1::JobSpec& spec, const std::string& split, int64_t expected) {
  const std::string root = SplitPath(spec.dataset().path(), split);
  auto dataset = ImageFolderDataset::Open(root, spec.dataset().channels());
  if (!dataset.ok()) return dataset.status();
  if ((*dataset)->size() != expected) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s holds %d samples here but the coordinator counted %d: the data "
        "set differs between hosts",
        root, (*dataset)->size(), expected));
  }
  return std::shared_ptr<ImageFolderDataset>(std::move(*dataset));
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const v1::OptimizerSpec& o, std::vector<torch::Tensor> params) {
  if (o.type() == v1::OPTIMIZER_TYPE_SGD) {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(o.learning_rate())
                    .momentum(o.momentum())
                    .weight_decay(o.weight_decay()));
  }
  return std::make_unique<torch::optim::Adam>(
      params, torch::optim::AdamOptions(o.learning_rate())
                  .weight_decay(o.weight_decay()));
}

double ParamSum(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (const torch::Tensor& p : model.parameters()) {
    sum += p.to(torch::kFloat64).sum().item<double>();
  }
  return sum;
}

// Rank 0 reads the checkpoint named by `resume_from` and broadcasts its
// bytes; every rank restores from them (no shared file system needed).
absl::StatusOr<TrainPosition> Resume(const TrainContext& c,
                                     torch::nn::Module& model,
                                     torch::optim::Optimizer& optimizer) {
  const std::string& from = c.spec.checkpoint().resume_from();
  std::vector<char> bytes;
  std::string name = from;
  absl::Status read_status;
  if (c.rank == 0 && c.read_resume) {
    auto read = c.read_resume();
    if (read.ok()) bytes = std::move(*read);
    read_status = read.status();
  } else if (c.rank == 0) {
    auto path = ResolveCheckpoint(from);
    if (path.ok()) {
      name = *path;
      auto read = ReadFileBytes(*path);
      if (read.ok()) bytes = std::move(*read);
      read_status = read.status();
    } else {
      read_status = path.status();
    }
  }
  // Size first (-1: rank 0 could not read it), then the bytes.
  at::Tensor size = torch::tensor(
      {read_status.ok() ? static_cast<int64_t>(bytes.size()) : int64_t{-1}});
  if (absl::Status s = c.comm->Broadcast(size, 0); !s.ok()) return s;
  if (!read_status.ok()) return read_status;
  if (size.item<int64_t>() < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("rank 0 could not read checkpoint ", from));
  }
  at::Tensor buffer = torch::empty({size.item<int64_t>()}, torch::kUInt8);
  if (c.rank == 0) std::memcpy(buffer.data_ptr(), bytes.data(), bytes.size());
  if (absl::Status s = c.comm->Broadcast(buffer, 0); !s.ok()) return s;
  bytes.assign(static_cast<char*>(buffer.data_ptr()),
               static_cast<char*>(buffer.data_ptr()) + buffer.numel());
  auto position = RestoreCheckpoint(bytes, name, model, optimizer);
  if (!position.ok()) return position.status();
  if (c.resume_remaining) {
    // The coordinator's shards of this epoch hold only what is left.
    position->epoch_batch = 0;
    return position;
  }
  if (position->epoch_batch > 0 &&
      (position->world_size != c.world_size ||
       position->batch_size != c.spec.batch_size())) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s stops mid-epoch (epoch %d, batch %d) under %d rank(s) of batch "
        "%d; this job has %d rank(s) of batch %d: resume mid-epoch with the "
        "same world size and batch size",
        name, position->epoch, position->epoch_batch, position->world_size,
        position->batch_size, c.world_size, c.spec.batch_size()));
  }
  return position;
}

}  // namespace

absl::StatusOr<TrainResult> Train(const TrainContext& c) {
  const v1::JobSpec& spec = c.spec;
  torch::manual_seed(spec.seed());
  auto train_set = OpenSplit(spec, spec.dataset().split(), c.train_samples);
  if (!train_set.ok()) return train_set.status();
  std::shared_ptr<ImageFolderDataset> eval_set;
  if (!spec.dataset().eval_split().empty()) {
    auto opened = OpenSplit(spec, spec.dataset().eval_split(), c.eval_samples);
    if (!opened.ok()) return opened.status();
    eval_set = *opened;
  }
  // Shape from the first image; augmentation keeps it.
  auto first = (*train_set)->Load(0);
  if (!first.ok()) return first.status();
  auto augment =
      MakeAugmentation(spec.augmentation(), first->rows, first->cols);
  if (!augment.ok()) return augment.status();
  LoaderOptions lo;
  lo.batch_size = spec.batch_size();
  lo.threads = spec.loader_threads();
  lo.prefetch_depth = spec.prefetch_depth();
  lo.seed = static_cast<uint64_t>(spec.seed()) * 1000003 + c.rank;
  auto loader = BatchLoader::Create(*train_set, std::move(*augment), lo);
  if (!loader.ok()) return loader.status();
  std::unique_ptr<BatchLoader> eval_loader;
  if (eval_set) {
    LoaderOptions eo = lo;
    eo.threads = std::max(1, spec.loader_threads());
    auto created = BatchLoader::Create(eval_set, nullptr, eo);
    if (!created.ok()) return created.status();
    eval_loader = std::move(*created);
  }

  ModelShape shape;
  shape.channels = (*loader)->channels();
  shape.height = (*loader)->height();
  shape.width = (*loader)->width();
  shape.classes = static_cast<int>((*train_set)->classes().size());
  auto model = MakeModel(spec.model(), shape);
  if (!model.ok()) return model.status();
  // Compute runs on the GPU when the communicator is NCCL and this LibTorch
  // has CUDA; otherwise on the CPU (NCCL then stages through device memory).
  const torch::Device device =
      c.comm->backend() == "nccl" && torch::cuda::is_available()
          ? torch::Device(torch::kCUDA, c.cuda_device)
          : torch::Device(torch::kCPU);
  (*model)->to(device);
  if (absl::Status s = Reducer::BroadcastModel(**model, *c.comm); !s.ok()) {
    return s;
  }
  ReducerOptions ro;
  ro.bucket_cap_bytes = spec.bucket_cap_bytes() > 0 ? spec.bucket_cap_bytes()
                                                    : ro.bucket_cap_bytes;
  ro.first_bucket_cap_bytes =
      std::min(ro.first_bucket_cap_bytes, ro.bucket_cap_bytes);
  if (spec.gradient_compression() == v1::GRADIENT_COMPRESSION_FP16) {
    ro.wire_dtype = torch::kHalf;
  } else if (spec.gradient_compression() == v1::GRADIENT_COMPRESSION_BF16) {
    ro.wire_dtype = torch::kBFloat16;
  }
  const int accumulate = std::max(1, spec.grad_accumulation_steps());
  auto reducer = Reducer::Create((*model)->parameters(), c.comm, ro);
  if (!reducer.ok()) return reducer.status();
  auto optimizer = MakeOptimizer(spec.optimizer(), (*model)->parameters());
  TrainPosition start;
  if (!spec.checkpoint().resume_from().empty()) {
    auto resumed = Resume(c, **model, *optimizer);
    if (!resumed.ok()) return resumed.status();
    start = *resumed;
  }

  TrainResult result;
  int64_t step = start.step;
  std::map<std::string, std::string> metadata = c.metadata;
  metadata["job_spec"] = spec.ShortDebugString();
  // Rank 0 checkpoints; `epoch`/`epoch_batch` name the next batch to train.
  auto checkpoint = [&](int64_t epoch, int64_t epoch_batch) -> absl::Status {
    if (c.rank != 0 || spec.checkpoint().directory().empty()) {
      return absl::OkStatus();
    }
    TrainPosition at{epoch, epoch_batch, step, c.world_size, spec.batch_size()};
    auto path = WriteCheckpoint(**model, *optimizer, at, metadata,
                                spec.checkpoint().directory());
    if (!path.ok()) return path.status();
    result.checkpoint = *path;
    if (c.on_checkpoint) {
      v1::CheckpointCommit commit;
      commit.set_path(*path);
      commit.set_epoch(static_cast<int>(epoch));
      commit.set_epoch_batch(epoch_batch);
      commit.set_step(step);
      c.on_checkpoint(commit);
    }
    return absl::OkStatus();
  };
  std::ofstream trace;
  if (!c.sample_trace.empty()) {
    trace.open(c.sample_trace, std::ios::app);
    if (!trace) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot open sample trace ", c.sample_trace));
    }
  }
  for (int epoch = static_cast<int>(start.epoch); epoch < spec.epochs();
       ++epoch) {
    if (c.epoch) c.epoch->store(epoch);
    auto indices = c.shard(epoch, /*eval=*/false);
    if (!indices.ok()) return indices.status();
    const int64_t first_batch = epoch == start.epoch ? start.epoch_batch : 0;
    if (absl::Status s = (*loader)->StartEpoch(epoch, *indices, first_batch);
        !s.ok()) {
      return s;
    }
    const int64_t steps_per_epoch = (*loader)->num_batches();
    (*model)->train();
    Batch batch;
    while (true) {
      if (c.cancel && c.cancel->load()) {
        return absl::CancelledError("training cancelled");
      }
      const auto step_start = Clock::now();
      auto got = (*loader)->Next(&batch);
      if (!got.ok()) return got.status();
      if (!*got) break;
      const auto compute_start = Clock::now();
      // Gradient accumulation: only the last batch of each group of
      // `accumulate` (or of the epoch) synchronises and steps (DDP no_sync).
      const int micro = static_cast<int>(batch.index % accumulate);
      const bool sync =
          micro == accumulate - 1 || batch.index == steps_per_epoch - 1;
      if (micro == 0) optimizer->zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(
          (*model)->forward(batch.images.to(device, /*non_blocking=*/true)),
          batch.labels.to(device, /*non_blocking=*/true));
      (*reducer)->set_require_sync(sync);
      if (sync) (*reducer)->PrepareForBackward();
      (accumulate > 1 ? loss / accumulate : loss).backward();
      if (sync) {
        if (absl::Status s = (*reducer)->Finalize(); !s.ok()) return s;
        optimizer->step();
      }
      ++step;
      if (c.step) c.step->store(step);
      if (trace.is_open()) {
        trace << epoch << ' ' << step;
        for (int64_t i : batch.samples) trace << ' ' << i;
        trace << '\n' << std::flush;
      }
      const double step_ms = MsSince(step_start);
      v1::StepMetrics m;
      m.set_rank(c.rank);
      m.set_epoch(epoch);
      m.set_step(step);
      m.set_steps_per_epoch(steps_per_epoch);
      m.set_loss(loss.item<double>());
      m.set_data_wait_ms(batch.wait_ms);
      const double exposed = sync ? (*reducer)->exposed_ms() : 0;
      m.set_allreduce_ms(exposed);
      m.set_allreduce_total_ms(sync ? (*reducer)->allreduce_ms() : 0);
      m.set_compute_ms(MsSince(compute_start) - exposed);
      m.set_step_ms(step_ms);
      m.set_samples_per_sec(batch.images.size(0) * 1000.0 / step_ms);
      m.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
      m.set_skipped_samples((*loader)->skipped_total());
      if (c.checksum_every > 0 && step % c.checksum_every == 0) {
        const double sum = ParamSum(**model);
        m.set_param_checksum(sum);
        auto all = c.comm->AllGather(absl::StrFormat("%.17g", sum));
        if (!all.ok()) return all.status();
        for (int r = 0; r < static_cast<int>(all->size()); ++r) {
          if ((*all)[r] != (*all)[0]) {
            return absl::InternalError(absl::StrFormat(
                "parameters diverged at step %d: rank 0 checksum %s, rank %d "
                "checksum %s",
                step, (*all)[0], r, (*all)[r]));
          }
        }
      }
      if (c.on_step) c.on_step(m);
      const int64_t interval = spec.checkpoint().interval_steps();
      if (sync && interval > 0 && step % interval == 0) {
        if (absl::Status s = checkpoint(epoch, batch.index + 1); !s.ok()) {
          return s;
        }
      }
    }
    if (eval_loader) {
      (*model)->eval();
      torch::NoGradGuard no_grad;
      auto eval_indices = c.shard(epoch, /*eval=*/true);
      if (!eval_indices.ok()) return eval_indices.status();
      if (absl::Status s = eval_loader->StartEpoch(epoch, *eval_indices);
          !s.ok()) {
        return s;
      }
      double correct = 0, loss_sum = 0, count = 0;
      Batch eb;
      while (true) {
        auto got = eval_loader->Next(&eb);
        if (!got.ok()) return got.status();
        if (!*got) break;
        torch::Tensor logits =
            (*model)->forward(eb.images.to(device)).to(torch::kCPU);
        loss_sum +=
            torch::nn::functional::cross_entropy(
                logits, eb.labels,
                torch::nn::functional::CrossEntropyFuncOptions().reduction(
                    torch::kSum))
                .item<double>();
        correct += logits.argmax(1).eq(eb.labels).sum().item<double>();
        count += eb.images.size(0);
      }
      torch::Tensor totals = torch::tensor({static_cast<float>(correct),
                                            static_cast<float>(loss_sum),
                                            static_cast<float>(count)});
      if (absl::Status s = c.comm->AllReduce(totals, ReduceOp::kSum); !s.ok()) {
        return s;
      }
      v1::EvalMetrics e;
      e.set_epoch(epoch);
      e.set_samples(static_cast<int64_t>(totals[2].item<float>()));
      e.set_accuracy(totals[0].item<float>() /
                     std::max(1.0f, totals[2].item<float>()));
      e.set_loss(totals[1].item<float>() /
                 std::max(1.0f, totals[2].item<float>()));
      result.accuracy = e.accuracy();
      if (c.rank == 0 && c.on_eval) c.on_eval(e);
    }
  }
  if (absl::Status s = checkpoint(spec.epochs(), 0); !s.ok()) return s;
  result.steps = step;
  return result;
}

}  // namespace gradsync
