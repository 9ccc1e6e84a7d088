#include "worker/train/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "foundation/data_index/image_folder_index.h"
#include "loader/batch_loader.h"
#include "loader/exception_status.h"
#include "loader/open_dataset.h"
#include "worker/model/builtin_model.h"
#include "worker/model/checkpoint.h"
#include "worker/model/layout_probe.h"
#include "worker/model/memory_format.h"
#include "worker/model/script_model.h"
#include "worker/reducer/reducer.h"
#include "worker/train/compute_device.h"
#include "worker/train/cuda_host_to_device.h"
#include "worker/train/device_feeder.h"
#include "worker/train/evaluate.h"
#include "worker/train/foreach_sgd.h"
#include "worker/train/fused_adam.h"
#include "worker/train/grad_scaler.h"
#include "worker/train/loss.h"
#include "worker/train/precision.h"
#include "worker/train/resume.h"
#include "worker/train/step_deadline.h"

namespace gradsync {
namespace {

using Clock = std::chrono::steady_clock;

// Longest wait for one host-device copy (a batch, the loss) before the step
// fails naming it; copies take milliseconds, so only a wedged GPU gets here.
constexpr absl::Duration kTransferTimeout = absl::Minutes(2);

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

absl::StatusOr<std::shared_ptr<const Dataset>> OpenSplit(
    const TrainSpec& spec, const std::string& split, int64_t expected,
    std::shared_ptr<const Dataset> opened) {
  absl::StatusOr<std::shared_ptr<const Dataset>> dataset = std::move(opened);
  if (*dataset == nullptr) {
    dataset = OpenDataset(spec.dataset_path, split, spec.channels,
                          spec.dataset_access);
  }
  if (!dataset.ok()) return dataset.status();
  if ((*dataset)->size() != expected) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s holds %d samples here but the coordinator counted %d: the data "
        "set differs between hosts",
        SplitPath(spec.dataset_path, split), (*dataset)->size(), expected));
  }
  return *dataset;
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const TrainSpec& spec, std::vector<torch::Tensor> params) {
  if (spec.optimizer == OptimizerKind::kSgd) {
    const auto options = torch::optim::SGDOptions(spec.learning_rate)
                             .momentum(spec.momentum)
                             .weight_decay(spec.weight_decay);
    // On a GPU one multi-tensor update (PyTorch's default there); on the
    // CPU LibTorch's loop, whose speed bench/README.md measured.
    if (!params.empty() && params[0].is_cuda()) {
      return std::make_unique<ForeachSgd>(params, options);
    }
    return std::make_unique<torch::optim::SGD>(params, options);
  }
  return std::make_unique<FusedAdam>(
      params, torch::optim::AdamOptions(spec.learning_rate)
                  .weight_decay(spec.weight_decay));
}

ReducerOptions MakeReducerOptions(const TrainSpec& spec, Backend backend) {
  ReducerOptions ro;
  ro.bucket_cap_bytes = spec.bucket_cap_bytes > 0
                            ? spec.bucket_cap_bytes
                            : DefaultBucketCapBytes(backend);
  ro.first_bucket_cap_bytes =
      std::min(ro.first_bucket_cap_bytes, ro.bucket_cap_bytes);
  if (spec.compression == WireCompression::kFp16) {
    ro.wire_dtype = torch::kHalf;
  } else if (spec.compression == WireCompression::kBf16) {
    ro.wire_dtype = torch::kBFloat16;
  }
  return ro;
}

// The sum of every parameter, in float64. One read of the device: the
// per-parameter sums stay where the parameters are (a GPU would otherwise
// be drained once per parameter). The same parameters give the same bits on
// every rank: each reduction runs in a fixed order.
double ParamSum(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sums;
  for (const torch::Tensor& p : params) {
    sums.push_back(p.sum(torch::kFloat64));
  }
  return sums.empty() ? 0 : torch::stack(sums).sum().item<double>();
}

// What one Train() call builds before its first step.
struct Session {
  std::shared_ptr<const Dataset> train_set;
  std::unique_ptr<BatchLoader> loader;
  std::unique_ptr<BatchLoader> eval_loader;  // null without an eval split
  std::unique_ptr<TrainableModel> model;
  // The model's parameters that train (requires_grad), in its order: what
  // the reducer and the optimizer hold.
  std::vector<torch::Tensor> params;
  torch::Device device{torch::kCPU};
  std::unique_ptr<Reducer> reducer;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  // The GPU's copy stream (device_feeder.h); null on the CPU.
  std::unique_ptr<HostToDevice> transfers;
  // Watches the model's work (the probe, steps, evaluation batches).
  std::unique_ptr<StepDeadline> deadline;
};

// The data sets and their loaders (the eval loader without augmentation).
absl::Status OpenData(const TrainContext& c, Session& s) {
  const TrainSpec& spec = c.spec;
  auto train_set = OpenSplit(spec, spec.split, c.train_samples, c.train_set);
  if (!train_set.ok()) return train_set.status();
  s.train_set = *train_set;
  std::shared_ptr<const Dataset> eval_set;
  if (!spec.eval_split.empty()) {
    auto opened = OpenSplit(spec, spec.eval_split, c.eval_samples, c.eval_set);
    if (!opened.ok()) return opened.status();
    eval_set = *opened;
  }
  // Shape from the first image; augmentation keeps it. Tensors are used
  // as they are.
  std::shared_ptr<const Transform> augment;
  if (s.train_set->tensors() != nullptr) {
    if (spec.augmentation != "none") {
      return absl::InvalidArgumentError(absl::StrCat(
          "augmentation ", spec.augmentation, " applies to images; ",
          s.train_set->name(0), " is a row of a tensor file"));
    }
  } else {
    auto first = s.train_set->Load(0);
    if (!first.ok()) return first.status();
    auto made =
        MakeAugmentation(spec.augmentation, first->rows(), first->cols());
    if (!made.ok()) return made.status();
    augment = *std::move(made);
  }
  LoaderOptions lo;
  lo.batch_size = spec.batch_size;
  lo.threads = spec.loader_threads;
  lo.prefetch_depth = spec.prefetch_depth;
  lo.seed = static_cast<uint64_t>(spec.seed) * 1000003 + c.rank;
  auto loader = BatchLoader::Create(s.train_set, std::move(augment), lo);
  if (!loader.ok()) return loader.status();
  s.loader = std::move(*loader);
  if (eval_set) {
    LoaderOptions eo = lo;
    eo.threads = std::max(1, spec.loader_threads);
    auto created = BatchLoader::Create(eval_set, nullptr, eo);
    if (!created.ok()) return created.status();
    s.eval_loader = std::move(*created);
  }
  return absl::OkStatus();
}

// The built-in model the spec names, or its model file, checked and
// loaded (script_model.h).
absl::StatusOr<std::unique_ptr<TrainableModel>> LoadModel(const TrainContext& c,
                                                          const Session& s) {
  // Classes, or for float targets the values one sample's target holds.
  int64_t outputs = s.train_set->num_classes();
  if (const TensorSamples* tensors = s.train_set->tensors();
      tensors != nullptr && outputs == 0) {
    outputs = tensors->y.numel() / tensors->y.size(0);
  }
  if (c.spec.model_file.empty()) {
    // {C, H, W}; a row of fewer dimensions as [1, H, W] or [1, 1, F].
    std::vector<int64_t> sample = s.loader->sample_shape();
    while (sample.size() < 3) sample.insert(sample.begin(), 1);
    if (sample.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model ", c.spec.model, " takes samples of up to 3 dimensions; ",
          s.train_set->name(0), " has ", sample.size()));
    }
    ModelShape shape;
    shape.channels = static_cast<int>(sample[0]);
    shape.height = static_cast<int>(sample[1]);
    shape.width = static_cast<int>(sample[2]);
    shape.classes = static_cast<int>(outputs);
    return MakeBuiltinModel(c.spec.model, shape);
  }
  auto bytes = ReadFileBytes(c.spec.model_file, kMaxModelFileBytes);
  if (!bytes.ok()) return bytes.status();
  const absl::string_view view(bytes->data(), bytes->size());
  if (c.verify_model_file) {
    if (absl::Status st = c.verify_model_file(view); !st.ok()) return st;
  }
  auto loaded = LoadScriptModel(view, outputs);
  if (!loaded.ok()) return loaded.status();
  return std::unique_ptr<TrainableModel>(*std::move(loaded));
}

// On the CPU, convolutions and what follows them run faster in NHWC
// (memory_format.h); on CUDA the layout stays as PyTorch's default. The
// built-in models are known to compute the same in both; a model file goes
// channels-last only when a probe batch shows it does (layout_probe.h) on
// every rank (the ranks vote, so that all of them agree). Called with rank
// 0's weights everywhere: the probe is the same on every rank.
absl::Status ChooseLayout(const TrainContext& c, Session& s) {
  // Channels-last is a layout of [N, C, H, W] batches only.
  const std::vector<int64_t>& sample = s.loader->sample_shape();
  if (!s.device.is_cpu() || sample.size() != 3) return absl::OkStatus();
  if (s.model->ChannelsLastSafe()) {
    UseChannelsLast(*s.model);
    return absl::OkStatus();
  }
  bool nhwc = false;
  {
    StepDeadline::Scope watched = s.deadline->Watch(
        absl::StrCat("rank ", c.rank, "'s channels-last probe"));
    nhwc = ProbeChannelsLast(*s.model,
                             ProbeBatch(2, sample[0], sample[1], sample[2]));
  }
  torch::Tensor votes = torch::tensor({nhwc ? 1.0f : 0.0f});
  if (absl::Status st = c.comm->AllReduce(votes, ReduceOp::kSum); !st.ok()) {
    return st;
  }
  if (nhwc && votes.item<float>() < static_cast<float>(c.world_size)) {
    UseContiguous(*s.model);
  }
  return absl::OkStatus();
}

// The model on its device with rank 0's parameters, its reducer and its
// optimizer.
absl::Status BuildModel(const TrainContext& c, Session& s) {
  auto model = LoadModel(c, s);
  if (!model.ok()) return model.status();
  s.model = *std::move(model);
  auto device = ComputeDevice(c.comm->backend(), c.cuda_device);
  if (!device.ok()) return device.status();
  s.device = *device;
  if (absl::Status st = CheckPrecision(c.spec.precision, s.device); !st.ok()) {
    return st;
  }
  s.model->To(s.device);
  if (s.device.is_cuda()) {
    auto transfers = CreateCudaHostToDevice(s.device.index());
    if (!transfers.ok()) return transfers.status();
    s.transfers = std::move(*transfers);
  }
  std::vector<torch::Tensor> everything;
  for (NamedTensor& p : s.model->NamedParameters())
    everything.push_back(p.value);
  for (NamedTensor& b : s.model->NamedBuffers()) everything.push_back(b.value);
  if (absl::Status st = Reducer::BroadcastTensors(everything, *c.comm);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ChooseLayout(c, s); !st.ok()) return st;
  s.params = TrainableParameters(*s.model);
  auto reducer = Reducer::Create(s.params, c.comm,
                                 MakeReducerOptions(c.spec, c.comm->backend()));
  if (!reducer.ok()) return reducer.status();
  s.reducer = std::move(*reducer);
  s.optimizer = MakeOptimizer(c.spec, s.params);
  return absl::OkStatus();
}

// The epochs of one Train() call, from `start` on.
class Loop {
 public:
  Loop(const TrainContext& c, Session& s, const TrainPosition& start)
      : c_(c),
        s_(s),
        start_(start),
        step_(start.step),
        accumulate_(std::max(1, c.spec.grad_accumulation_steps)),
        scaled_(c.spec.precision == Precision::k16Mixed),
        scaler_(start.scaler.value_or(ScalerState{})),
        transfers_(c.transfers != nullptr ? c.transfers : s.transfers.get()),
        feeder_(transfers_, kTransferTimeout),
        profiler_(c.profile, s.device),
        metadata_(c.metadata) {
    metadata_["job_spec"] = c.spec.description;
    metadata_["precision"] = PrecisionName(c.spec.precision);
  }

  absl::StatusOr<TrainResult> Run() {
    if (!c_.sample_trace.empty()) {
      trace_.open(c_.sample_trace, std::ios::app);
      if (!trace_) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot open sample trace ", c_.sample_trace));
      }
    }
    for (int epoch = static_cast<int>(start_.epoch); epoch < c_.spec.epochs;
         ++epoch) {
      if (absl::Status s = TrainEpoch(epoch); !s.ok()) return s;
      if (s_.eval_loader) {
        if (absl::Status s = EvaluateEpoch(epoch); !s.ok()) return s;
      }
    }
    if (absl::Status s = Checkpoint(c_.spec.epochs, 0); !s.ok()) return s;
    if (absl::Status s = ExportTrained(); !s.ok()) return s;
    result_.steps = step_;
    return result_;
  }

 private:
  absl::Status TrainEpoch(int epoch) {
    if (c_.epoch) c_.epoch->store(epoch);
    auto indices = c_.shard(epoch, /*eval=*/false);
    if (!indices.ok()) return indices.status();
    const int64_t first_batch = epoch == start_.epoch ? start_.epoch_batch : 0;
    // No copy may still read a loader slot when the loader starts over.
    if (absl::Status s = feeder_.Drain(); !s.ok()) return s;
    if (absl::Status s = s_.loader->StartEpoch(epoch, *indices, first_batch);
        !s.ok()) {
      return s;
    }
    feeder_.Start([this](Batch* b) { return s_.loader->Next(b); });
    s_.model->SetTraining(true);
    Batch batch;
    while (true) {
      if (c_.cancel && c_.cancel->load()) {
        return absl::CancelledError("training cancelled");
      }
      const auto step_start = Clock::now();
      profiler_.BeforeStep(step_ + 1);
      auto got = feeder_.Next(&batch);
      if (!got.ok()) return got.status();
      if (!*got) return SettleSteps();
      if (absl::Status s = TrainStep(epoch, batch, step_start); !s.ok()) {
        return s;
      }
      if (profiler_.EndsAt(step_)) {
        // The profile waits for the GPU: first wait, bounded, for the
        // all-reduces the step left in flight.
        if (absl::Status s = s_.reducer->Drain(); !s.ok()) return s;
      }
      if (absl::Status s = profiler_.AfterStep(step_); !s.ok()) return s;
    }
  }

  // Forward, backward (the reducer all-reduces buckets as gradients become
  // ready) and, on a synchronising batch, the optimizer step.
  absl::Status TrainStep(int epoch, const Batch& batch,
                         Clock::time_point step_start) {
    const int64_t steps_per_epoch = s_.loader->num_batches();
    const auto compute_start = Clock::now();
    // Gradient accumulation: only the last batch of each group of
    // `accumulate` (or of the epoch) synchronises and steps (DDP no_sync).
    const int micro = static_cast<int>(batch.index % accumulate_);
    const bool sync =
        micro == accumulate_ - 1 || batch.index == steps_per_epoch - 1;
    // CPU: zeroed, not reset to none: measured before host_allocator.h's
    // malloc setting, dropping the gradients (5.5 MB for fashion_cnn) made
    // the next forward 10 ms slower (their pages went back to the kernel
    // and fresh ones faulted in); not measured again with it. GPU: reset to
    // none (PyTorch's default), which saves a fill kernel per parameter;
    // the caching allocator hands the memory back at once.
    if (micro == 0) {
      if (s_.device.is_cuda()) {
        for (torch::Tensor& p : s_.params) p.mutable_grad() = torch::Tensor();
      } else {
        s_.optimizer->zero_grad();
      }
    }
    StepReport m;
    // The model's part of the step, forward to backward, is watched; the
    // wait for its all-reduces has the collectives' own deadline.
    std::optional<StepDeadline::Scope> watched(
        s_.deadline->Watch(absl::StrCat("rank ", c_.rank, "'s step ", step_ + 1,
                                        " (forward, loss and backward)")));
    absl::StatusOr<torch::Tensor> computed;
    {
      // Forward and loss in the run's precision (precision.h), on the batch
      // the feeder already put on the device.
      AutocastScope autocast(c_.spec.precision, s_.device);
      computed = s_.model->Forward(batch.images);
      if (computed.ok()) {
        computed =
            ComputeLoss(c_.spec.loss, *s_.model, *computed, batch.labels);
      }
    }
    if (!computed.ok()) return computed.status();
    const torch::Tensor loss = *std::move(computed);
    m.forward_ms = MsSince(compute_start);
    // The trace line goes out before backward sends any gradient: once the
    // other ranks have this rank's gradients (and may commit the step), a
    // SIGKILL must not be able to lose the record of what it trained. A
    // step that never completes is never committed, so a line for it is
    // discarded by whoever reads the trace up to the committed step.
    if (trace_.is_open()) {
      trace_ << epoch << ' ' << step_ + 1;
      for (int64_t i : batch.samples) trace_ << ' ' << i;
      trace_ << '\n' << std::flush;
    }
    const auto backward_start = Clock::now();
    s_.reducer->set_require_sync(sync);
    if (sync) s_.reducer->PrepareForBackward();
    torch::Tensor objective = accumulate_ > 1 ? loss / accumulate_ : loss;
    const double loss_scale = scaled_ ? scaler_.scale() : 0;
    (scaled_ ? scaler_.Scale(objective) : objective).backward();
    watched.reset();
    bool skipped = false;
    // A step that does not synchronise still waits (bounded) for the last
    // synchronised step's all-reduces, which a GPU leaves in flight: what
    // reads the GPU next (the loss, a checksum) must not be the first to
    // wait on a hung collective, with no deadline of its own.
    absl::Status reduced = sync ? s_.reducer->Finalize() : s_.reducer->Drain();
    if (!reduced.ok()) return reduced;
    const double exposed = sync ? s_.reducer->exposed_ms() : 0;
    m.backward_ms = MsSince(backward_start) - exposed;
    const auto optimizer_start = Clock::now();
    if (sync) {
      if (scaled_) {
        // 16-mixed: every rank agrees to skip a step whose gradients
        // overflowed on any rank (grad_scaler.h).
        auto overflow = scaler_.UnscaleAndCheck(s_.params, *c_.comm);
        if (!overflow.ok()) return overflow.status();
        skipped = *overflow;
        scaler_.Update(skipped);
      }
      if (!skipped) s_.optimizer->step();
    }
    m.optimizer_ms = MsSince(optimizer_start);
    ++step_;
    if (c_.step) c_.step->store(step_);
    const double step_ms = MsSince(step_start);
    m.compute_ms = m.forward_ms + m.backward_ms + m.optimizer_ms;
    m.rank = c_.rank;
    m.epoch = epoch;
    m.step = step_;
    m.steps_per_epoch = steps_per_epoch;
    m.data_wait_ms = batch.wait_ms;
    m.allreduce_ms = exposed;
    m.allreduce_total_ms = sync ? s_.reducer->allreduce_ms() : 0;
    m.step_ms = step_ms;
    m.samples_per_sec = batch.images.size(0) * 1000.0 / step_ms;
    m.time_unix_ms = absl::ToUnixMillis(absl::Now());
    m.skipped_samples = s_.loader->skipped_total();
    m.loss_scale = loss_scale;
    m.step_skipped = skipped;
    if (c_.checksum_every > 0 && step_ % c_.checksum_every == 0) {
      if (absl::Status s = CheckParameters(m); !s.ok()) return s;
    }
    if (absl::Status s = Report(m, loss); !s.ok()) return s;
    const int64_t interval = c_.spec.checkpoint_interval_steps;
    if (sync && interval > 0 && step_ % interval == 0) {
      return Checkpoint(epoch, batch.index + 1);
    }
    return absl::OkStatus();
  }

  // Hands a step's report, with its loss, to on_step. On the CPU the loss
  // is read at once. On a GPU reading it at once would stop the host until
  // the optimizer's kernels finish, so its copy to the host is queued and
  // the report goes out when the next step ends (the copy long done by
  // then), or at the end of the epoch, or before a checkpoint.
  absl::Status Report(const StepReport& m, const torch::Tensor& loss) {
    if (transfers_ == nullptr) {
      StepReport now = m;
      now.loss = loss.item<double>();
      if (c_.on_step) c_.on_step(now);
      return absl::OkStatus();
    }
    if (absl::Status s = FlushReport(); !s.ok()) return s;
    if (absl::Status s = transfers_->ReadScalarAsync(loss); !s.ok()) return s;
    pending_ = m;
    return absl::OkStatus();
  }

  // The end of an epoch or a checkpoint: the last step's all-reduces
  // (Reducer::Finalize leaves them in flight on a GPU) are done and its
  // report is sent.
  absl::Status SettleSteps() {
    if (absl::Status s = s_.reducer->Drain(); !s.ok()) return s;
    return FlushReport();
  }

  // Sends the report Report() held back, if any.
  absl::Status FlushReport() {
    if (!pending_) return absl::OkStatus();
    auto loss = transfers_->ReadScalar(kTransferTimeout);
    if (!loss.ok()) return loss.status();
    pending_->loss = *loss;
    if (c_.on_step) c_.on_step(*pending_);
    pending_.reset();
    return absl::OkStatus();
  }

  // Every rank's parameter sum must be rank 0's (DDP keeps replicas equal).
  absl::Status CheckParameters(StepReport& m) {
    // Reading the parameters waits for the GPU: first wait, bounded, for
    // the all-reduces the step left in flight.
    if (absl::Status s = s_.reducer->Drain(); !s.ok()) return s;
    const double sum = ParamSum(s_.params);
    m.param_checksum = sum;
    auto all = c_.comm->AllGather(absl::StrFormat("%.17g", sum));
    if (!all.ok()) return all.status();
    for (int r = 0; r < static_cast<int>(all->size()); ++r) {
      if ((*all)[r] != (*all)[0]) {
        return absl::InternalError(absl::StrFormat(
            "parameters diverged at step %d: rank 0 checksum %s, rank %d "
            "checksum %s",
            step_, (*all)[0], r, (*all)[r]));
      }
    }
    return absl::OkStatus();
  }

  absl::Status EvaluateEpoch(int epoch) {
    auto indices = c_.shard(epoch, /*eval=*/true);
    if (!indices.ok()) return indices.status();
    // Every rank evaluates with rank 0's buffers (batch norm's running
    // statistics, which each rank updated from its own batches), as DDP's
    // broadcast_buffers gives them to every forward pass; rank 0's, which
    // checkpoints hold, are DDP's exactly. (TrainEpoch settled the last
    // step's all-reduces.)
    std::vector<torch::Tensor> buffers;
    for (NamedTensor& b : s_.model->NamedBuffers()) buffers.push_back(b.value);
    if (absl::Status s = Reducer::BroadcastTensors(buffers, *c_.comm);
        !s.ok()) {
      return s;
    }
    auto report =
        Evaluate(*s_.model, s_.device, c_.spec.precision, c_.spec.loss,
                 *s_.eval_loader, *indices, epoch, *c_.comm, *s_.deadline);
    if (!report.ok()) return report.status();
    result_.accuracy = report->accuracy;
    if (c_.rank == 0 && c_.on_eval) c_.on_eval(*report);
    return absl::OkStatus();
  }

  // Rank 0 of a job training a model file writes the trained module as
  // TorchScript beside its final checkpoint ("<checkpoint>.torchscript",
  // which checkpoint resolution never takes for a checkpoint).
  absl::Status ExportTrained() {
    if (c_.rank != 0 || c_.spec.model_file.empty() ||
        result_.checkpoint.empty()) {
      return absl::OkStatus();
    }
    const std::string path = result_.checkpoint + ".torchscript";
    if (absl::Status s = s_.model->ExportTorchScript(path); !s.ok()) return s;
    result_.torchscript = path;
    return absl::OkStatus();
  }

  // Rank 0 writes a checkpoint; `epoch`/`epoch_batch` name the next batch
  // to train.
  absl::Status Checkpoint(int64_t epoch, int64_t epoch_batch) {
    // Step reports come before the checkpoint that follows their steps.
    if (absl::Status s = SettleSteps(); !s.ok()) return s;
    if (c_.rank != 0 || c_.spec.checkpoint_directory.empty()) {
      return absl::OkStatus();
    }
    TrainPosition at;
    at.epoch = epoch;
    at.epoch_batch = epoch_batch;
    at.step = step_;
    at.world_size = c_.world_size;
    at.batch_size = c_.spec.batch_size;
    if (scaled_) at.scaler = scaler_.state();
    auto path =
        WriteCheckpoint(*s_.model, *s_.optimizer, at, metadata_,
                        c_.spec.checkpoint_directory, c_.spec.checkpoint_tag);
    if (!path.ok()) return path.status();
    result_.checkpoint = *path;
    if (c_.on_checkpoint) {
      c_.on_checkpoint(
          CheckpointReport{*path, static_cast<int>(epoch), epoch_batch, step_});
    }
    return absl::OkStatus();
  }

  const TrainContext& c_;
  Session& s_;
  const TrainPosition start_;
  int64_t step_;
  const int accumulate_;
  const bool scaled_;  // 16-mixed: dynamic loss scaling
  GradScaler scaler_;
  HostToDevice* const transfers_;  // null on the CPU
  DeviceFeeder feeder_;
  StepProfiler profiler_;
  std::optional<StepReport> pending_;  // Report()'s, waiting for its loss
  std::map<std::string, std::string> metadata_;
  std::ofstream trace_;
  TrainResult result_;
};

}  // namespace

namespace {

absl::StatusOr<TrainResult> TrainUnguarded(const TrainContext& c) {
  torch::manual_seed(c.spec.seed);
  Session session;
  session.deadline =
      std::make_unique<StepDeadline>(c.spec.step_timeout, c.on_step_overrun);
  if (absl::Status s = OpenData(c, session); !s.ok()) return s;
  if (absl::Status s = BuildModel(c, session); !s.ok()) return s;
  TrainPosition start;
  if (!c.spec.resume_from.empty() || c.read_resume) {
    auto resumed = ResumeFromCheckpoint(c, *session.model, *session.optimizer);
    if (!resumed.ok()) return resumed.status();
    start = *resumed;
  }
  return Loop(c, session, start).Run();
}

}  // namespace

absl::StatusOr<TrainResult> Train(const TrainContext& c) {
  return GuardExceptions("training", [&] { return TrainUnguarded(c); });
}

}  // namespace gradsync
