#include "loader/batch_loader.h"

#include <torch/torch.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gradsync/config.h"
#include "loader/exception_status.h"
#include "loader/memory_budget.h"

#if GRADSYNC_WITH_OPENCV
#include <opencv2/core/utility.hpp>
#endif

namespace gradsync {
namespace {

double MsSince(absl::Time t) {
  return absl::ToDoubleMilliseconds(absl::Now() - t);
}

}  // namespace

absl::StatusOr<std::unique_ptr<BatchLoader>> BatchLoader::Create(
    std::shared_ptr<const Dataset> dataset,
    std::shared_ptr<const Transform> transform, LoaderOptions options) {
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loader: batch_size must be >= 1 (got ", options.batch_size, ")"));
  }
  if (options.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loader: threads must be >= 1 (got ", options.threads, ")"));
  }
  // The loader threads are the parallelism: OpenCV's own thread pool inside
  // each of them would only oversubscribe the cores.
#if GRADSYNC_WITH_OPENCV
  cv::setNumThreads(0);
#endif
  if (options.prefetch_depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader: prefetch_depth must be >= 1 (got ",
                     options.prefetch_depth, ")"));
  }
  if (dataset == nullptr || dataset->size() == 0) {
    return absl::InvalidArgumentError("loader: the data set is empty");
  }
  std::unique_ptr<BatchLoader> loader(new BatchLoader(
      std::move(dataset), std::move(transform), std::move(options)));
  if (absl::Status s = GuardExceptions("loader: the first sample's shape",
                                       [&] { return loader->InferShape(); });
      !s.ok()) {
    return s;
  }
  const LoaderOptions& o = loader->options_;
  if ((!o.mean.empty() && static_cast<int>(o.mean.size()) != o.channels) ||
      o.mean.size() != o.std.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loader: Normalize needs one mean and one std per channel (",
        o.channels, " channels)"));
  }
  // Every slot holds a whole batch: bound them before allocating.
  double sample_numel = 1, target_numel = 1;
  for (int64_t d : loader->sample_shape_) sample_numel *= d;
  for (int64_t d : loader->target_shape_) target_numel *= d;
  const double slots = double(o.threads) * o.prefetch_depth;
  const double slot_bytes =
      double(o.batch_size) * (4.0 * sample_numel + 8.0 * target_numel);
  const double budget = o.max_slot_bytes > 0
                            ? double(o.max_slot_bytes)
                            : double(PhysicalMemoryBytes()) / 2;
  if (slots * slot_bytes > budget) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "loader: %d threads x %d prefetch_depth x batch_size %d of [%s] "
        "float samples need %.3g GB of batch slots, more than the %.3g GB "
        "allowed (half this host's memory): lower batch_size, prefetch_depth "
        "or loader_threads",
        o.threads, o.prefetch_depth, o.batch_size,
        absl::StrJoin(loader->sample_shape_, ", "), slots * slot_bytes / 1e9,
        budget / 1e9));
  }
  const bool pin = torch::cuda::is_available();
  if (absl::Status s =
          GuardExceptions("loader: allocating batch slots",
                          [&] { return loader->AllocateSlots(pin); });
      !s.ok()) {
    return s;
  }
  for (int t = 0; t < o.threads; ++t) {
    loader->threads_.emplace_back([raw = loader.get()] { raw->WorkerLoop(); });
  }
  return loader;
}

absl::Status BatchLoader::AllocateSlots(bool pin) {
  const LoaderOptions& o = options_;
  {
    absl::MutexLock lock(&mu_);
    slots_.resize(static_cast<size_t>(o.threads) * o.prefetch_depth);
    std::vector<int64_t> images = {o.batch_size}, labels = {o.batch_size};
    images.insert(images.end(), sample_shape_.begin(), sample_shape_.end());
    labels.insert(labels.end(), target_shape_.begin(), target_shape_.end());
    for (Slot& slot : slots_) {
      // zeros, not empty: touch the pages now rather than in the first epoch.
      slot.images = torch::zeros(
          images,
          torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pin));
      slot.labels = torch::empty(
          labels,
          torch::TensorOptions().dtype(target_dtype_).pinned_memory(pin));
    }
  }
  return absl::OkStatus();
}

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset,
                         std::shared_ptr<const Transform> transform,
                         LoaderOptions options)
    : dataset_(std::move(dataset)),
      transform_(std::move(transform)),
      options_(std::move(options)) {}

BatchLoader::~BatchLoader() { Stop(); }

absl::Status BatchLoader::InferShape() {
  if (const TensorSamples* tensors = dataset_->tensors()) {
    if (transform_ != nullptr || !options_.mean.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "loader: ", dataset_->name(0),
          ": augmentation and Normalize apply to images; a data set of "
          "tensors is used as it is"));
    }
    sample_shape_.assign(tensors->x.sizes().begin() + 1,
                         tensors->x.sizes().end());
    target_shape_.assign(tensors->y.sizes().begin() + 1,
                         tensors->y.sizes().end());
    target_dtype_ = tensors->y.scalar_type();
    return absl::OkStatus();
  }
  if (options_.channels == 0 || options_.height == 0 || options_.width == 0) {
    absl::StatusOr<Image> image = dataset_->Load(0);
    if (!image.ok()) return image.status();
    if (transform_ != nullptr) {
      SampleRng rng(options_.seed, 0, 0);
      if (absl::Status s = transform_->Apply(*image, rng); !s.ok()) return s;
    }
    if (options_.channels == 0) options_.channels = image->channels();
    if (options_.height == 0) options_.height = image->rows();
    if (options_.width == 0) options_.width = image->cols();
  }
  sample_shape_ = {options_.channels, options_.height, options_.width};
  return absl::OkStatus();
}

void BatchLoader::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

int64_t BatchLoader::num_batches() const {
  absl::MutexLock lock(&mu_);
  return epoch_batches_;
}

int64_t BatchLoader::skipped_total() const {
  absl::MutexLock lock(&mu_);
  return skipped_total_;
}

absl::Status BatchLoader::StartEpoch(int64_t epoch,
                                     std::vector<int64_t> indices,
                                     int64_t first_batch) {
  for (int64_t i : indices) {
    if (i < 0 || i >= dataset_->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("loader: sample index ", i, " outside the data set [0, ",
                       dataset_->size(), ")"));
    }
  }
  absl::MutexLock lock(&mu_);
  if (stop_) return absl::CancelledError("loader stopped");
  // Abandon the previous epoch: hand out no more work and let the threads
  // inside LoadInto finish writing into their slots.
  active_ = false;
  mu_.Await(absl::Condition(
      +[](int* busy) { return *busy == 0; }, &busy_));
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t b = options_.batch_size;
  epoch_ = epoch;
  indices_ = std::move(indices);
  epoch_batches_ = options_.drop_last ? n / b : (n + b - 1) / b;
  epoch_positions_ = options_.drop_last ? epoch_batches_ * b : n;
  if (first_batch < 0 || first_batch > epoch_batches_) {
    active_ = false;
    return absl::InvalidArgumentError(
        absl::StrCat("loader: cannot start epoch ", epoch, " at batch ",
                     first_batch, ": it has ", epoch_batches_, " batches"));
  }
  next_position_ = first_batch * b;
  next_batch_ = first_batch;
  released_ = first_batch;
  for (Slot& slot : slots_) slot.batch = -1;
  active_ = true;
  return absl::OkStatus();
}

void BatchLoader::WorkerLoop() {
  int64_t ring;  // fixed at Create; read under the lock like all of slots_
  {
    absl::MutexLock lock(&mu_);
    ring = static_cast<int64_t>(slots_.size());
  }
  while (true) {
    int64_t position, sample, epoch;
    Slot* slot;
    int row;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this, ring]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stop_ || (active_ && next_position_ < epoch_positions_ &&
                         BatchOf(next_position_) < released_ + ring);
      };
      mu_.Await(absl::Condition(&has_work));
      if (stop_) return;
      position = next_position_++;
      const int64_t batch = BatchOf(position);
      slot = &slots_[batch % ring];
      row = static_cast<int>(position % options_.batch_size);
      if (row == 0) {  // first sample of this batch: claim the slot
        slot->batch = batch;
        slot->size = static_cast<int>(
            std::min<int64_t>(options_.batch_size,
                              epoch_positions_ - batch * options_.batch_size));
        slot->filled = 0;
        slot->error = absl::OkStatus();
        slot->error_position = -1;
        slot->samples.assign(slot->size, -1);
        slot->valid.assign(slot->size, 1);
        slot->decode_ms = slot->transform_ms = 0;
      }
      sample = indices_[position];
      slot->samples[row] = sample;
      epoch = epoch_;
      ++busy_;
    }
    double decode_ms = 0, transform_ms = 0;
    absl::Status status;
    try {  // a throwing decoder or transform fails the sample, not the worker
      status = LoadInto(epoch, position, sample, *slot, row, &decode_ms,
                        &transform_ms);
    } catch (const std::exception& e) {
      status = StatusFromException(
          e, absl::StrCat("loading sample ", dataset_->name(sample)));
    }
    absl::MutexLock lock(&mu_);
    --busy_;
    slot->decode_ms += decode_ms;
    slot->transform_ms += transform_ms;
    if (!status.ok()) {
      slot->valid[row] = 0;
      if (slot->error.ok() || position < slot->error_position) {
        slot->error = status;
        slot->error_position = position;
      }
    }
    ++slot->filled;
  }
}

absl::Status BatchLoader::LoadInto(int64_t epoch, int64_t position,
                                   int64_t sample, Slot& slot, int row,
                                   double* decode_ms, double* transform_ms) {
  if (const TensorSamples* tensors = dataset_->tensors()) {
    // A row of x, bytes made floats as ToTensorInto makes an image's (the
    // same bits: v * (1/255)), and its target.
    const absl::Time t = absl::Now();
    at::Tensor out = slot.images.select(0, row);
    out.copy_(tensors->x.select(0, sample));
    if (tensors->x.scalar_type() == at::kByte) out.mul_(1.f / 255.f);
    slot.labels.select(0, row).copy_(tensors->y.select(0, sample));
    *transform_ms = MsSince(t);
    return absl::OkStatus();
  }
  absl::Time t = absl::Now();
  absl::StatusOr<Image> image = dataset_->Load(sample);
  *decode_ms = MsSince(t);
  if (!image.ok()) return image.status();
  t = absl::Now();
  const ImageShape in = image->shape();
  const ImageShape shape = transform_ ? transform_->OutputShape(in) : in;
  if (shape != ImageShape{options_.height, options_.width, options_.channels}) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "image %s is %dx%dx%d after transforms, the batch holds %dx%dx%d "
        "(images of one size, or set channels)",
        dataset_->name(sample), shape.rows, shape.cols, shape.channels,
        options_.height, options_.width, options_.channels));
  }
  const int64_t per_image =
      int64_t{options_.channels} * options_.height * options_.width;
  float* out = slot.images.data_ptr<float>() + row * per_image;
  if (transform_ != nullptr) {
    SampleRng rng(options_.seed, epoch, position);
    if (absl::Status s = transform_->ApplyToTensor(*image, rng, options_.mean,
                                                   options_.std, out);
        !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(dataset_->name(sample), ": ", s.message()));
    }
  } else {
    ToTensorInto(*image, options_.mean, options_.std, out);
  }
  slot.labels.data_ptr<int64_t>()[row] = dataset_->label(sample);
  *transform_ms = MsSince(t);
  return absl::OkStatus();
}

absl::StatusOr<bool> BatchLoader::Next(Batch* batch) {
  const absl::Time start = absl::Now();
  absl::MutexLock lock(&mu_);
  if (stop_) return absl::CancelledError("loader stopped");
  if (!active_) {
    return absl::FailedPreconditionError("loader: call StartEpoch() first");
  }
  released_ = next_batch_;  // the previous batch's slot is free again
  if (next_batch_ >= epoch_batches_) return false;
  const int64_t want = next_batch_;
  Slot& slot = slots_[want % slots_.size()];
  auto ready = [this, &slot, want]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stop_ || (slot.batch == want && slot.filled == slot.size);
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&ready),
                             start + options_.batch_timeout)) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "loader: batch %d not ready after %s: %d of %d samples loaded by %d "
        "thread(s)",
        want, absl::FormatDuration(options_.batch_timeout),
        slot.batch == want ? slot.filled : 0, slot.size, options_.threads));
  }
  if (stop_) return absl::CancelledError("loader stopped");
  if (!slot.error.ok() && !options_.skip_corrupt) return slot.error;

  batch->index = want;
  batch->samples.clear();
  std::vector<int64_t> rows;
  for (int r = 0; r < slot.size; ++r) {
    if (slot.valid[r]) {
      rows.push_back(r);
      batch->samples.push_back(slot.samples[r]);
    }
  }
  batch->skipped = slot.size - static_cast<int64_t>(rows.size());
  skipped_total_ += batch->skipped;
  if (batch->skipped == 0) {
    batch->images = slot.images.narrow(0, 0, slot.size);
    batch->labels = slot.labels.narrow(0, 0, slot.size);
  } else {
    const at::Tensor keep = torch::tensor(rows, torch::kInt64);
    batch->images = slot.images.index_select(0, keep);
    batch->labels = slot.labels.index_select(0, keep);
  }
  batch->decode_ms = slot.decode_ms;
  batch->transform_ms = slot.transform_ms;
  batch->wait_ms = MsSince(start);
  ++next_batch_;
  return true;
}

}  // namespace gradsync
