// The NCCL communicator (nccl.h directly, like ProcessGroupNCCL underneath).
//
// Bootstrap: rank 0 creates the ncclUniqueId and publishes it in the job's
// store; the others read it there (ProcessGroupNCCL's broadcastUniqueNCCLID).
// The communicator is non-blocking (ncclConfig_t.blocking = 0), so
// initialisation and every collective are polled against the deadline; on
// expiry the communicator is aborted with ncclCommAbort, never left
// hanging, and later calls fail at once.
//
// Tensors: CUDA tensors are used in place. CPU tensors (what a CPU-only
// LibTorch build has) are staged through one reused device buffer: copied
// up, reduced by NCCL, copied back. Either way the call returns once the
// result is in `tensor`.
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
#include <cstring>
#include <thread>
#endif

namespace gradsync {

#if GRADSYNC_WITH_NCCL
namespace {

constexpr char kUniqueIdKey[] = "nccl/unique_id";

absl::Status CudaError(const std::string& what, cudaError_t e) {
  return absl::InternalError(
      absl::StrCat("nccl: ", what, ": ", cudaGetErrorString(e)));
}

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

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const CommOptions& o)
      : Communicator(o.rank, o.size, o.store, o.timeout),
        device_(o.cuda_device) {}

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      if (aborted_) {
        // ncclCommAbort already freed it.
      } else {
        ncclCommDestroy(comm_);
      }
    }
    if (staging_ != nullptr) cudaFree(staging_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Backend backend() const override { return Backend::kNccl; }

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
    ncclUniqueId id;
    if (rank_ == 0) {
      if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
        return absl::InternalError(
            absl::StrCat("nccl: ncclGetUniqueId: ", ncclGetErrorString(r)));
      }
      if (absl::Status s = store_->Set(
              kUniqueIdKey, std::string(id.internal, sizeof(id.internal)));
          !s.ok()) {
        return s;
      }
    } else {
      auto got = store_->Get(kUniqueIdKey, timeout_);
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
    return WaitComm("init", 0);  // not a collective: sequence stays 0
  }

  absl::Status AllReduce(at::Tensor& tensor, ReduceOp op) override {
    auto type = NcclType(tensor);
    if (!type.ok()) return type.status();
    return Run("allreduce", tensor, [&](void* buf) {
      return ncclAllReduce(buf, buf, tensor.numel(), *type,
                           op == ReduceOp::kAverage ? ncclAvg : ncclSum, comm_,
                           stream_);
    });
  }

  absl::Status Broadcast(at::Tensor& tensor, int root) override {
    if (root < 0 || root >= size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " outside [0, ", size_, ")"));
    }
    const size_t bytes = tensor.numel() * tensor.element_size();
    return Run("broadcast", tensor, [&](void* buf) {
      return ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_);
    });
  }

  absl::Status Barrier() override {
    at::Tensor one = at::ones({1}, at::kFloat);
    return Run("barrier", one, [&](void* buf) {
      return ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm_, stream_);
    });
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
    // In place: this rank's slot of the result is its send buffer.
    absl::Status s = Run("allgather", all, [&](void* buf) {
      return ncclAllGather(static_cast<char*>(buf) + rank_ * stride, buf,
                           stride, ncclUint8, comm_, stream_);
    });
    if (!s.ok()) return s;
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) {
      out[r].assign(static_cast<const char*>(all.data_ptr()) + r * stride,
                    static_cast<size_t>(sizes[r].item<float>()));
    }
    return out;
  }

 private:
  // Runs one collective on `tensor` (in place on the device for CUDA
  // tensors, staged for CPU ones) and waits for it within the deadline.
  template <typename Launch>
  absl::Status Run(const std::string& op, at::Tensor& tensor, Launch launch) {
    const int64_t seq = Enter();
    if (aborted_) {
      return absl::FailedPreconditionError(
          absl::StrCat("nccl: ", op, " #", seq,
                       ": the communicator was aborted after an "
                       "earlier failure"));
    }
    if (!tensor.is_contiguous()) {
      return absl::InvalidArgumentError("nccl needs a contiguous tensor");
    }
    const size_t bytes = tensor.numel() * tensor.element_size();
    if (bytes == 0) return absl::OkStatus();
    cudaSetDevice(device_);
    void* buf = tensor.data_ptr();
    const bool staged = !tensor.is_cuda();
    if (staged) {
      if (absl::Status s = Reserve(bytes); !s.ok()) return s;
      buf = staging_;
      if (cudaError_t e = cudaMemcpyAsync(buf, tensor.data_ptr(), bytes,
                                          cudaMemcpyHostToDevice, stream_);
          e != cudaSuccess) {
        return CudaError("copy to device", e);
      }
    }
    ncclResult_t r = launch(buf);
    if (r != ncclSuccess && r != ncclInProgress) {
      return Fail(op, seq, ncclGetErrorString(r));
    }
    if (absl::Status s = WaitComm(op, seq); !s.ok()) return s;
    if (staged) {
      if (cudaError_t e = cudaMemcpyAsync(tensor.data_ptr(), buf, bytes,
                                          cudaMemcpyDeviceToHost, stream_);
          e != cudaSuccess) {
        return CudaError("copy to host", e);
      }
    }
    return WaitStream(op, seq);
  }

  absl::Status Reserve(size_t bytes) {
    if (bytes <= staging_bytes_) return absl::OkStatus();
    if (staging_ != nullptr) cudaFree(staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    if (cudaError_t e = cudaMalloc(&staging_, bytes); e != cudaSuccess) {
      return CudaError(absl::StrCat("allocate ", bytes, " staging bytes"), e);
    }
    staging_bytes_ = bytes;
    return absl::OkStatus();
  }

  // Polls the communicator until the enqueue (or init) has completed.
  absl::Status WaitComm(const std::string& op, int64_t seq) {
    const absl::Time deadline = absl::Now() + timeout_;
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return absl::OkStatus();
      if (state != ncclInProgress) {
        return Fail(op, seq, ncclGetLastError(comm_));
      }
      if (absl::Now() > deadline) return Expire(op, seq);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Polls the stream until the collective's kernels have finished.
  absl::Status WaitStream(const std::string& op, int64_t seq) {
    const absl::Time deadline = absl::Now() + timeout_;
    while (true) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return absl::OkStatus();
      if (e != cudaErrorNotReady) return CudaError(op, e);
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        return Fail(op, seq, ncclGetLastError(comm_));
      }
      if (absl::Now() > deadline) return Expire(op, seq);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  absl::Status Expire(const std::string& op, int64_t seq) {
    Abort();
    return CollectiveError(
        op, seq,
        absl::DeadlineExceededError("timed out; NCCL communicator aborted"));
  }

  absl::Status Fail(const std::string& op, int64_t seq,
                    const std::string& cause) {
    Abort();
    return CollectiveError(
        op, seq,
        absl::UnavailableError(
            absl::StrCat("NCCL error: ", cause, "; communicator aborted")));
  }

  void Abort() {
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
    ncclCommAbort(comm_);
  }

  const int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  bool aborted_ = false;
};

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
