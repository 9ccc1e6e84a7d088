// The NCCL communicator (nccl.h directly, like ProcessGroupNCCL underneath).
//
// Bootstrap: rank 0 creates the ncclUniqueId and publishes it in the job's
// store; the others read it there (ProcessGroupNCCL's broadcastUniqueNCCLID).
// The communicator is non-blocking (ncclConfig_t.blocking = 0), so
// initialisation and every enqueue are polled against the deadline.
//
// Streams (as ProcessGroupNCCL): collectives run on the communicator's own
// non-blocking stream. Before each launch on a CUDA tensor the NCCL stream
// waits on an event recorded on the caller's current LibTorch stream, so
// it never reads a tensor that compute is still writing; the caching
// allocator is told the tensor is in use on the NCCL stream (recordStream).
// After the launch an end event is recorded; Work::OrderCurrentStream makes
// the caller's stream wait on it (no CPU block) and Work::Wait polls it.
//
// Errors (ProcessGroupNCCL's watchdog, done by whoever waits): Wait polls
// the end event, ncclCommGetAsyncError and the deadline (timeout from the
// launch). On an NCCL error or expiry the communicator is aborted
// (ncclCommAbort, which returns even while a peer is dead or stopped and
// kernels spin), and it fails every later call at once.
//
// CPU tensors (evaluation counts, checksums, the resume broadcast) are
// staged through pinned host memory and a device buffer, all copies
// asynchronous on the NCCL stream, so the host never blocks inside a CUDA
// call that a dead peer could hold up: it only polls the end event.
//
// Teardown: ncclCommFinalize (flushes outstanding work), polled against
// the deadline, then ncclCommDestroy; a failed or late finalize aborts.
#include "worker/comm/nccl/nccl_communicator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/config.h"
#include "worker/comm/devices.h"

#if GRADSYNC_WITH_NCCL
#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "foundation/store/rendezvous_keys.h"
#include "worker/comm/nccl/cuda_error.h"
#include "worker/comm/nccl/torch_stream.h"
#endif

namespace gradsync {

#if GRADSYNC_WITH_NCCL
namespace {

absl::StatusOr<ncclDataType_t> NcclType(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return ncclFloat;
    case at::kHalf:
      return ncclHalf;
    case at::kBFloat16:
      return ncclBfloat16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("nccl all-reduce supports float32, float16 and "
                       "bfloat16 tensors, not ",
                       c10::toString(t.scalar_type())));
  }
}

// Sleeps between polls: short at first (collectives of small buckets end in
// microseconds), longer while a collective goes on.
void PollPause(int polls) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(polls < 1000 ? 10 : 100));
}

class NcclCommunicator;

// One enqueued collective on `tensor`. `start` and `end` are recorded on
// the NCCL stream (timing enabled). A CPU `tensor` was staged: Wait copies
// the result into it.
class NcclWork : public Work {
 public:
  NcclWork(NcclCommunicator* comm, std::string op, int64_t seq,
           at::Tensor tensor, cudaEvent_t start, cudaEvent_t end,
           absl::Time deadline, absl::Status launched)
      : comm_(comm),
        op_(std::move(op)),
        seq_(seq),
        tensor_(std::move(tensor)),
        start_(start),
        end_(end),
        deadline_(deadline),
        status_(std::move(launched)) {}
  ~NcclWork() override {
    // Safe while pending: CUDA releases a recorded event once it completes.
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (end_ != nullptr) cudaEventDestroy(end_);
  }

  void OrderCurrentStream() override;
  absl::Status Wait() override;
  double elapsed_ms() const override { return elapsed_ms_; }

 private:
  NcclCommunicator* const comm_;
  const std::string op_;
  const int64_t seq_;
  const at::Tensor tensor_;  // kept alive until the Work is gone
  cudaEvent_t start_;
  cudaEvent_t end_;
  const absl::Time deadline_;
  absl::Status status_;  // the launch's; then the completion's
  bool waited_ = false;
  double elapsed_ms_ = 0;
};

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const CommOptions& o)
      : Communicator(o.rank, o.size, o.store, o.timeout),
        device_(o.cuda_device) {}

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    Shutdown();
    if (ready_ != nullptr) cudaEventDestroy(ready_);
    if (staging_ != nullptr) cudaFree(staging_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Backend backend() const override { return Backend::kNccl; }
  int device() const { return device_; }

  // Publishes or reads the unique id, then initialises the communicator.
  absl::Status Connect() {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
      return CudaError(absl::StrCat("select device ", device_), e);
    }
    if (cudaError_t e =
            cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        e != cudaSuccess) {
      return CudaError("create stream", e);
    }
    if (cudaError_t e =
            cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming);
        e != cudaSuccess) {
      return CudaError("create event", e);
    }
    ncclUniqueId id;
    if (rank_ == 0) {
      if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
        return absl::InternalError(
            absl::StrCat("nccl: ncclGetUniqueId: ", ncclGetErrorString(r)));
      }
      if (absl::Status s =
              store_->Set(rendezvous_keys::kNcclUniqueId,
                          std::string(id.internal, sizeof(id.internal)));
          !s.ok()) {
        return s;
      }
    } else {
      auto got = store_->Get(rendezvous_keys::kNcclUniqueId, timeout_);
      if (!got.ok()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "nccl: rank ", rank_, " did not get rank 0's ncclUniqueId within ",
            absl::FormatDuration(timeout_), ": ", got.status().message()));
      }
      if (got->size() != sizeof(id.internal)) {
        return absl::InternalError("nccl: malformed ncclUniqueId in store");
      }
      std::memcpy(id.internal, got->data(), sizeof(id.internal));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      return absl::UnavailableError(absl::StrCat(
          "nccl: ncclCommInitRankConfig: ", ncclGetErrorString(r)));
    }
    // Not a collective: the sequence stays 0.
    return WaitEnqueued("init", 0, absl::Now() + timeout_);
  }

  std::unique_ptr<Work> AllReduceAsync(at::Tensor tensor,
                                       ReduceOp op) override {
    const int64_t seq = Enter();
    auto type = NcclType(tensor);
    if (!type.ok()) return Failed("allreduce", seq, type.status());
    std::unique_ptr<Work> work =
        Enqueue("allreduce", seq, tensor, [&](void* buf) {
          return ncclAllReduce(buf, buf, tensor.numel(), *type,
                               op == ReduceOp::kAverage ? ncclAvg : ncclSum,
                               comm_, stream_);
        });
    // Staged through the one pinned buffer: finish before returning (the
    // Work keeps the outcome).
    if (!tensor.is_cuda()) (void)work->Wait();
    return work;
  }

  // The synchronous collectives wait on the CPU: their callers read the
  // result next.
  absl::Status AllReduce(at::Tensor& tensor, ReduceOp op) override {
    return AllReduceAsync(tensor, op)->Wait();
  }

  absl::Status Broadcast(at::Tensor& tensor, int root) override {
    const int64_t seq = Enter();
    if (root < 0 || root >= size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " outside [0, ", size_, ")"));
    }
    const size_t bytes = tensor.numel() * tensor.element_size();
    return Enqueue("broadcast", seq, tensor,
                   [&](void* buf) {
                     return ncclBroadcast(buf, buf, bytes, ncclUint8, root,
                                          comm_, stream_);
                   })
        ->Wait();
  }

  absl::Status Barrier() override {
    const int64_t seq = Enter();
    at::Tensor one = at::ones({1}, at::kFloat);
    return Enqueue("barrier", seq, one,
                   [&](void* buf) {
                     return ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum,
                                          comm_, stream_);
                   })
        ->Wait();
  }

  absl::StatusOr<std::vector<std::string>> AllGather(
      const std::string& mine) override {
    // Sizes first, then every rank's bytes padded to the longest.
    at::Tensor sizes = at::zeros({size_}, at::kFloat);
    sizes[rank_] = static_cast<float>(mine.size());
    if (absl::Status s = AllReduce(sizes, ReduceOp::kSum); !s.ok()) return s;
    int64_t longest = 0;
    for (int r = 0; r < size_; ++r) {
      longest = std::max<int64_t>(longest, sizes[r].item<float>());
    }
    const int64_t stride = std::max<int64_t>(longest, 1);
    at::Tensor all = at::zeros({size_ * stride}, at::kByte);
    std::memcpy(static_cast<char*>(all.data_ptr()) + rank_ * stride,
                mine.data(), mine.size());
    const int64_t seq = Enter();
    // In place: this rank's slot of the result is its send buffer.
    absl::Status s =
        Enqueue("allgather", seq, all, [&](void* buf) {
          return ncclAllGather(static_cast<char*>(buf) + rank_ * stride, buf,
                               stride, ncclUint8, comm_, stream_);
        })->Wait();
    if (!s.ok()) return s;
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) {
      out[r].assign(static_cast<const char*>(all.data_ptr()) + r * stride,
                    static_cast<size_t>(sizes[r].item<float>()));
    }
    return out;
  }

  // Polls `end` until it completes, NCCL reports an error or `deadline`
  // passes; aborts the communicator on failure.
  absl::Status WaitEvent(const std::string& op, int64_t seq, cudaEvent_t end,
                         absl::Time deadline) {
    return Poll(op, seq, deadline, [end](ncclResult_t) -> absl::StatusOr<bool> {
      const cudaError_t e = cudaEventQuery(end);
      if (e == cudaSuccess || e == cudaErrorNotReady) return e == cudaSuccess;
      return absl::InternalError(absl::StrCat("CUDA: ", cudaGetErrorString(e)));
    });
  }

  // Copies the staged result of a finished collective into `host`.
  void CopyOut(const at::Tensor& host) {
    std::memcpy(host.data_ptr(), pinned_, host.numel() * host.element_size());
  }

 private:
  // Enqueues one collective on `tensor` (in place on the device for CUDA
  // tensors, staged for CPU ones) ordered after the caller's stream, and
  // returns its Work; nothing waits for the kernels.
  template <typename LaunchFn>
  std::unique_ptr<Work> Enqueue(const std::string& op, int64_t seq,
                                at::Tensor tensor, LaunchFn launch) {
    const absl::Time deadline = absl::Now() + timeout_;
    if (abort_requested_) AbortComm();
    if (aborted_) return Failed(op, seq, Aborted(op, seq));
    if (!tensor.is_contiguous()) {
      return Failed(
          op, seq,
          absl::InvalidArgumentError("nccl needs a contiguous tensor"));
    }
    const bool staged = !tensor.is_cuda();
    if (!staged && tensor.get_device() != device_) {
      return Failed(op, seq,
                    absl::InvalidArgumentError(absl::StrFormat(
                        "nccl: tensor on cuda:%d, communicator on cuda:%d",
                        tensor.get_device(), device_)));
    }
    cudaSetDevice(device_);
    cudaEvent_t start = nullptr, end = nullptr;
    if (cudaError_t e = cudaEventCreate(&start); e != cudaSuccess) {
      return Failed(op, seq, CudaError("create event", e));
    }
    if (cudaError_t e = cudaEventCreate(&end); e != cudaSuccess) {
      cudaEventDestroy(start);
      return Failed(op, seq, CudaError("create event", e));
    }
    const size_t bytes = tensor.numel() * tensor.element_size();
    void* buf = tensor.data_ptr();
    absl::Status s;
    if (staged) {
      s = Reserve(bytes);
      if (s.ok()) {
        buf = staging_;
        std::memcpy(pinned_, tensor.data_ptr(), bytes);
        // From pinned memory the copy is asynchronous: it cannot block the
        // host behind a collective that never ends.
        if (cudaError_t e = cudaMemcpyAsync(buf, pinned_, bytes,
                                            cudaMemcpyHostToDevice, stream_);
            e != cudaSuccess) {
          s = CudaError("copy to device", e);
        }
      }
    } else {
      // The NCCL stream waits for what compute enqueued so far (the writes
      // of `tensor` among it); the allocator keeps `tensor`'s memory until
      // the NCCL stream is past this point.
      const cudaStream_t compute = CurrentTorchStream(device_);
      cudaError_t e = cudaEventRecord(ready_, compute);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(stream_, ready_, 0);
      if (e != cudaSuccess) s = CudaError("order after the compute stream", e);
      RecordStream(tensor, stream_, device_);
    }
    if (s.ok()) {
      cudaEventRecord(start, stream_);
      const ncclResult_t r = bytes == 0 ? ncclSuccess : launch(buf);
      if (r != ncclSuccess && r != ncclInProgress) {
        s = Fail(op, seq, ncclGetErrorString(r));
      } else if (bytes > 0) {
        s = WaitEnqueued(op, seq, deadline);
      }
    }
    if (s.ok() && staged) {
      if (cudaError_t e = cudaMemcpyAsync(pinned_, buf, bytes,
                                          cudaMemcpyDeviceToHost, stream_);
          e != cudaSuccess) {
        s = CudaError("copy to host", e);
      }
    }
    if (s.ok()) {
      if (cudaError_t e = cudaEventRecord(end, stream_); e != cudaSuccess) {
        s = CudaError("record event", e);
      }
    }
    return std::make_unique<NcclWork>(this, op, seq, tensor, start, end,
                                      deadline, std::move(s));
  }

  // A Work that already failed with `s`.
  std::unique_ptr<Work> Failed(const std::string& op, int64_t seq,
                               absl::Status s) {
    return std::make_unique<NcclWork>(this, op, seq, at::Tensor(), nullptr,
                                      nullptr, absl::InfiniteFuture(),
                                      std::move(s));
  }

  // Staging for CPU tensors: pinned host and device buffers, grown (to a
  // power of two, at least 1 MiB) only between collectives, when nothing
  // of this communicator is in flight.
  absl::Status Reserve(size_t bytes) {
    if (bytes <= staging_bytes_) return absl::OkStatus();
    size_t want = size_t{1} << 20;
    while (want < bytes) want <<= 1;
    if (staging_ != nullptr) cudaFree(staging_);
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
    staging_ = nullptr;
    pinned_ = nullptr;
    staging_bytes_ = 0;
    if (cudaError_t e = cudaMalloc(&staging_, want); e != cudaSuccess) {
      return CudaError(absl::StrCat("allocate ", want, " staging bytes"), e);
    }
    if (cudaError_t e = cudaHostAlloc(&pinned_, want, cudaHostAllocDefault);
        e != cudaSuccess) {
      return CudaError(absl::StrCat("pin ", want, " staging bytes"), e);
    }
    staging_bytes_ = want;
    return absl::OkStatus();
  }

  // Polls the non-blocking communicator until the last call (init or an
  // enqueue) has completed.
  absl::Status WaitEnqueued(const std::string& op, int64_t seq,
                            absl::Time deadline) {
    return Poll(op, seq, deadline,
                [](ncclResult_t state) -> absl::StatusOr<bool> {
                  return state == ncclSuccess;
                });
  }

  // The one polling loop: `finished(state)` (given the communicator's async
  // state) says whether the awaited work is done, or fails the wait; until
  // then an NCCL error, an abort or the deadline ends it (aborting the
  // communicator).
  template <typename Finished>
  absl::Status Poll(const std::string& op, int64_t seq, absl::Time deadline,
                    Finished finished) {
    for (int polls = 0;; ++polls) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      const absl::StatusOr<bool> done = finished(state);
      if (!done.ok())
        return Fail(op, seq, std::string(done.status().message()));
      if (*done) return absl::OkStatus();
      if (abort_requested_) return Fail(op, seq, "aborted on request");
      if (aborted_) return Aborted(op, seq);
      if (state != ncclSuccess && state != ncclInProgress) {
        return Fail(op, seq, ncclGetLastError(comm_));
      }
      if (absl::Now() > deadline) return Expire(op, seq);
      PollPause(polls);
    }
  }

  absl::Status Expire(const std::string& op, int64_t seq) {
    AbortComm();
    return CollectiveError(
        op, seq,
        absl::DeadlineExceededError("timed out; NCCL communicator aborted"));
  }

  absl::Status Fail(const std::string& op, int64_t seq,
                    const std::string& cause) {
    AbortComm();
    return CollectiveError(
        op, seq,
        absl::UnavailableError(
            absl::StrCat("NCCL error: ", cause, "; communicator aborted")));
  }

  absl::Status Aborted(const std::string& op, int64_t seq) const {
    if (abort_requested_) {
      return absl::AbortedError(absl::StrCat(
          "nccl: ", op, " #", seq, ": aborted: the attempt was ended"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("nccl: ", op, " #", seq,
                     ": the communicator was aborted after an earlier "
                     "failure"));
  }

  void AbortComm() {
    if (comm_ == nullptr || aborted_.exchange(true)) return;
    ncclCommAbort(comm_);
  }

 protected:
  // Only asks: the thread that issues collectives (the only one that polls
  // comm_) aborts it at its next poll or launch, so that ncclCommAbort
  // never frees the communicator under a poll on another thread.
  void AbortTransport() override { abort_requested_ = true; }

 private:
  // Finalize (outstanding work completes), then destroy; abort instead if
  // finalizing fails or outlasts the deadline.
  void Shutdown() {
    if (comm_ == nullptr || aborted_) return;
    const absl::Time deadline = absl::Now() + timeout_;
    ncclResult_t r = ncclCommFinalize(comm_);
    for (int polls = 0; r == ncclInProgress && absl::Now() < deadline;
         ++polls) {
      PollPause(polls);
      ncclCommGetAsyncError(comm_, &r);
    }
    if (r == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      AbortComm();
    }
    comm_ = nullptr;
  }

  const int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // recorded on the compute stream per launch
  void* staging_ = nullptr;      // device
  void* pinned_ = nullptr;       // host, page-locked
  size_t staging_bytes_ = 0;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> abort_requested_{false};  // by Abort(), any thread
};

void NcclWork::OrderCurrentStream() {
  if (!status_.ok() || end_ == nullptr || !tensor_.is_cuda()) return;
  cudaStreamWaitEvent(CurrentTorchStream(comm_->device()), end_, 0);
}

absl::Status NcclWork::Wait() {
  if (waited_ || !status_.ok()) return status_;
  waited_ = true;
  status_ = comm_->WaitEvent(op_, seq_, end_, deadline_);
  if (!status_.ok()) return status_;
  float ms = 0;
  if (cudaEventElapsedTime(&ms, start_, end_) == cudaSuccess) elapsed_ms_ = ms;
  if (!tensor_.is_cuda()) comm_->CopyOut(tensor_);
  return status_;
}

}  // namespace
#endif  // GRADSYNC_WITH_NCCL

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const CommOptions& options) {
#if !GRADSYNC_WITH_NCCL
  (void)options;
  return absl::UnimplementedError(
      "nccl: this gradsync was built without NCCL (CUDA toolkit or nccl.h "
      "not found); use backend gloo");
#else
  const int device = options.cuda_device;
  const DeviceReport devices = DiscoverDevices();
  if (devices.cuda.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("nccl: rank ", options.rank, " sees no GPU (",
                     devices.cuda_status, ")"));
  }
  if (device < 0 || device >= static_cast<int>(devices.cuda.size())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("nccl: rank %d asked for GPU %d; this host has %d",
                        options.rank, device, devices.cuda.size()));
  }
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl: rank ", options.rank, " outside [0, ", options.size, ")"));
  }
  auto comm = std::make_unique<NcclCommunicator>(options);
  if (absl::Status s = comm->Connect(); !s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
#endif
}

}  // namespace gradsync
