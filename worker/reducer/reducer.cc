#include "worker/reducer/reducer.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "loader/exception_status.h"

namespace gradsync {
namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t)
      .count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Reducer>> Reducer::Create(
    std::vector<torch::Tensor> params, Communicator* comm,
    ReducerOptions options) {
  if (comm == nullptr) return absl::InvalidArgumentError("reducer: no comm");
  const torch::Device device =
      params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  for (const torch::Tensor& p : params) {
    if (p.scalar_type() != torch::kFloat32 || p.device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reducer: parameters must be float32 and all on one device; found ",
          c10::toString(p.scalar_type()), " on ", p.device().str(), " next to ",
          device.str()));
    }
  }
  if (device.is_cuda() && comm->backend() != Backend::kNccl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "reducer: parameters on ", device.str(), " need the nccl backend, not ",
        BackendName(comm->backend())));
  }
  if (options.wire_dtype != torch::kFloat32 &&
      options.wire_dtype != torch::kHalf &&
      options.wire_dtype != torch::kBFloat16) {
    return absl::InvalidArgumentError(
        "reducer: wire dtype must be float32, float16 or bfloat16");
  }
  std::unique_ptr<Reducer> r(
      new Reducer(std::move(params), comm, options.wire_dtype));
  r->on_device_ = device.is_cuda();
  const int n = static_cast<int>(r->params_.size());
  r->bucket_of_.assign(n, -1);
  r->offset_of_.assign(n, 0);
  {
    absl::MutexLock lock(&r->mu_);
    r->ready_.assign(n, 0);
  }
  // Reverse registration order, capped bucket sizes.
  int64_t cap = options.first_bucket_cap_bytes;
  Bucket current;
  int64_t bytes = 0;
  for (int i = n - 1; i >= 0; --i) {
    if (!r->params_[i].requires_grad()) continue;
    const int64_t size = r->params_[i].numel() * 4;
    if (!current.params.empty() && bytes + size > cap) {
      r->buckets_.push_back(std::move(current));
      current = Bucket();
      bytes = 0;
      cap = options.bucket_cap_bytes;
    }
    current.offsets.push_back(bytes / 4);
    current.params.push_back(i);
    bytes += size;
  }
  if (!current.params.empty()) r->buckets_.push_back(std::move(current));
  for (int b = 0; b < r->num_buckets(); ++b) {
    Bucket& bucket = r->buckets_[b];
    int64_t numel = 0;
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      r->bucket_of_[bucket.params[k]] = b;
      r->offset_of_[bucket.params[k]] = bucket.offsets[k];
      numel += r->params_[bucket.params[k]].numel();
    }
    // On the parameters' device: CUDA buckets go to NCCL in place.
    bucket.flat = torch::zeros(
        {numel}, r->params_[bucket.params[0]].options().dtype(torch::kFloat));
    if (r->on_device_ && options.wire_dtype != torch::kFloat32) {
      bucket.wire = torch::empty(
          {numel}, bucket.flat.options().dtype(options.wire_dtype));
    }
  }
  // Post-hooks on the gradient accumulators fire once a parameter's .grad
  // holds this step's gradient.
  for (int i = 0; i < n; ++i) {
    if (r->bucket_of_[i] < 0) continue;
    auto acc = torch::autograd::impl::grad_accumulator(r->params_[i]);
    Reducer* raw = r.get();
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [raw, i](const torch::autograd::variable_list& outputs,
                 const torch::autograd::variable_list&) {
          raw->OnGradReady(i);
          return outputs;
        }));
    r->accumulators_.push_back(std::move(acc));
  }
  if (!r->on_device_) {
    r->comm_thread_ = std::thread([raw = r.get()] { raw->CommLoop(); });
  }
  return r;
}

Reducer::Reducer(std::vector<torch::Tensor> params, Communicator* comm,
                 torch::ScalarType wire_dtype)
    : params_(std::move(params)), comm_(comm), wire_dtype_(wire_dtype) {}

Reducer::~Reducer() {
  // The NCCL stream may still write the buckets; they are freed after.
  (void)Drain();
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (comm_thread_.joinable()) comm_thread_.join();
}

int Reducer::launched_during_backward() const {
  absl::MutexLock lock(&mu_);
  return launched_during_backward_;
}

int64_t DefaultBucketCapBytes(Backend backend) {
  return backend == Backend::kGloo ? int64_t{4} << 20 : int64_t{25} << 20;
}

absl::Status Reducer::BroadcastTensors(
    const std::vector<torch::Tensor>& tensors, Communicator& comm) {
  torch::NoGradGuard no_grad;
  // Communicators take contiguous tensors; a channels-last parameter goes
  // through a contiguous copy.
  auto broadcast = [&comm](torch::Tensor t) {
    if (t.is_contiguous()) return comm.Broadcast(t, 0);
    torch::Tensor staged = t.contiguous();
    if (absl::Status s = comm.Broadcast(staged, 0); !s.ok()) return s;
    t.copy_(staged);
    return absl::OkStatus();
  };
  for (const torch::Tensor& t : tensors) {
    if (absl::Status s = broadcast(t); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<int> Reducer::bucket_params(int b) const {
  return buckets_[b].params;
}

void Reducer::PrepareForBackward() {
  absl::MutexLock lock(&mu_);
  std::fill(ready_.begin(), ready_.end(), 0);
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    b.launched = b.done = false;
    b.work.reset();
  }
  next_launch_ = 0;
  completed_ = 0;
  finalizing_ = false;
  launched_during_backward_ = 0;
  error_ = absl::OkStatus();
  comm_ms_ = 0;
}

void Reducer::OnGradReady(int param) {
  if (!require_sync_) return;
  absl::MutexLock lock(&mu_);
  MarkReadyLocked(param, /*has_grad=*/true);
}

void Reducer::MarkReadyLocked(int param, bool has_grad) {
  if (ready_[param]) return;
  ready_[param] = 1;
  Bucket& b = buckets_[bucket_of_[param]];
  const torch::Tensor& grad = params_[param].grad();
  torch::NoGradGuard no_grad;
  torch::Tensor slice =
      b.flat.narrow(0, offset_of_[param], params_[param].numel());
  if (has_grad && grad.defined()) {
    slice.copy_(grad.reshape({-1}));
  } else {
    slice.zero_();
  }
  if (--b.pending == 0) LaunchReadyLocked();
}

void Reducer::LaunchReadyLocked() {
  // Launch in bucket order only, so every rank issues the same collectives
  // in the same sequence.
  while (next_launch_ < num_buckets() && buckets_[next_launch_].pending == 0) {
    buckets_[next_launch_].launched = true;
    if (!finalizing_) ++launched_during_backward_;
    if (on_device_) {
      LaunchOnDeviceLocked(buckets_[next_launch_++]);
    } else {
      queue_.push_back(next_launch_++);
    }
  }
  // The communication thread waits on a condition over queue_: absl::Mutex
  // re-evaluates it when the lock is released, so no notify is needed.
}

void Reducer::LaunchOnDeviceLocked(Bucket& b) {
  // Runs on the thread that completed the bucket (an autograd thread, or
  // Finalize's); its current stream is the one the gradients were copied
  // on, and AllReduceAsync orders the NCCL stream after it.
  torch::NoGradGuard no_grad;
  if (b.wire.defined()) {
    // DDP's fp16/bf16 compress hook: divide in float32, then cast, both on
    // the compute stream, into the bucket's persistent wire buffer.
    b.flat.div_(comm_->size());
    b.wire.copy_(b.flat);
    b.work = comm_->AllReduceAsync(b.wire, ReduceOp::kSum);
  } else {
    b.work = comm_->AllReduceAsync(b.flat, ReduceOp::kAverage);
  }
}

void Reducer::CommLoop() {
  auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_ || !queue_.empty();
  };
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(&work));
    if (stop_) break;
    const int b = queue_.front();
    queue_.pop_front();
    torch::Tensor flat = buckets_[b].flat;
    mu_.Unlock();
    const auto start = std::chrono::steady_clock::now();
    // An exception here (a cast that cannot allocate) would end the
    // process: it fails the step instead.
    const absl::Status s = GuardExceptions(
        absl::StrCat("all-reducing bucket ", b), [&]() -> absl::Status {
          if (wire_dtype_ == torch::kFloat32) {
            return comm_->AllReduce(flat, ReduceOp::kAverage);
          }
          torch::NoGradGuard no_grad;
          at::Tensor wire = flat.div(comm_->size()).to(wire_dtype_);
          absl::Status reduced = comm_->AllReduce(wire, ReduceOp::kSum);
          if (reduced.ok()) flat.copy_(wire);
          return reduced;
        });
    const double ms = MsSince(start);
    mu_.Lock();
    comm_ms_ += ms;
    if (!s.ok() && error_.ok()) error_ = s;
    buckets_[b].done = true;
    ++completed_;
  }
  mu_.Unlock();
}

absl::Status Reducer::Finalize() {
  if (!require_sync_) return absl::OkStatus();
  const auto start = std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  finalizing_ = true;
  // Parameters that got no gradient this step count as zero gradients.
  for (int i = 0; i < static_cast<int>(params_.size()); ++i) {
    if (bucket_of_[i] >= 0) MarkReadyLocked(i, /*has_grad=*/false);
  }
  absl::Status s = on_device_ ? FinishOnDeviceLocked() : FinishOnCpuLocked();
  exposed_ms_ = MsSince(start);
  return s;
}

absl::Status Reducer::FinishOnCpuLocked() {
  auto all_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return completed_ == num_buckets();
  };
  mu_.Await(absl::Condition(&all_done));
  allreduce_ms_ = comm_ms_;
  if (!error_.ok()) return error_;
  CopyBack();
  return absl::OkStatus();
}

absl::Status Reducer::FinishOnDeviceLocked() {
  torch::NoGradGuard no_grad;
  // The compute stream waits for each bucket and takes its result; the CPU
  // goes on enqueueing.
  for (Bucket& b : buckets_) {
    b.work->OrderCurrentStream();
    if (b.wire.defined()) b.flat.copy_(b.wire);
  }
  CopyBack();
  // The one CPU block of the step is on the previous step's all-reduces, so
  // the CPU runs at most one step ahead of the GPU, as under DDP (which
  // never blocks it), and a collective that fails or outlives its deadline
  // stops training one step later. This step's go in flight.
  absl::Status s = WaitInFlight();
  for (Bucket& b : buckets_) in_flight_.push_back(std::move(b.work));
  return s;
}

absl::Status Reducer::WaitInFlight() {
  // The buckets share the NCCL stream, so once the last is done all are;
  // each Wait reports its own failure.
  absl::Status s;
  if (!in_flight_.empty()) allreduce_ms_ = 0;
  for (std::unique_ptr<Work>& work : in_flight_) {
    absl::Status w = work->Wait();
    if (!w.ok() && s.ok()) s = w;
    allreduce_ms_ += work->elapsed_ms();
  }
  in_flight_.clear();
  return s;
}

absl::Status Reducer::Drain() {
  absl::MutexLock lock(&mu_);
  return WaitInFlight();
}

void Reducer::CopyBack() {
  torch::NoGradGuard no_grad;
  for (const Bucket& b : buckets_) {
    for (size_t k = 0; k < b.params.size(); ++k) {
      torch::Tensor& p = params_[b.params[k]];
      torch::Tensor slice = b.flat.narrow(0, b.offsets[k], p.numel());
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(slice.view_as(p));
    }
  }
}

}  // namespace gradsync
