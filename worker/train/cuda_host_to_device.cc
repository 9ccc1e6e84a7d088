#include "worker/train/cuda_host_to_device.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gradsync/config.h"

#if GRADSYNC_WITH_NCCL
#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "worker/comm/nccl/cuda_error.h"
#include "worker/comm/nccl/torch_stream.h"
#endif

namespace gradsync {

#if GRADSYNC_WITH_NCCL
namespace {

class CudaHostToDevice final : public HostToDevice {
 public:
  explicit CudaHostToDevice(int device) : device_(device) {}

  ~CudaHostToDevice() override {
    cudaSetDevice(device_);
    // Nothing may still write into memory freed here.
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    if (scalar_ready_ != nullptr) cudaEventSynchronize(scalar_ready_);
    for (cudaEvent_t e : copied_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (compute_ready_ != nullptr) cudaEventDestroy(compute_ready_);
    if (scalar_ready_ != nullptr) cudaEventDestroy(scalar_ready_);
    if (scalar_ != nullptr) cudaFreeHost(scalar_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Init() {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
      return CudaError(absl::StrCat("cudaSetDevice(", device_, ")"), e);
    }
    cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    for (cudaEvent_t* event :
         {&copied_[0], &copied_[1], &compute_ready_, &scalar_ready_}) {
      if (e == cudaSuccess) {
        e = cudaEventCreateWithFlags(event, cudaEventDisableTiming);
      }
    }
    if (e == cudaSuccess) {
      e = cudaHostAlloc(reinterpret_cast<void**>(&scalar_), sizeof(double),
                        cudaHostAllocDefault);
    }
    if (e != cudaSuccess) return CudaError("creating the copy stream", e);
    return absl::OkStatus();
  }

  absl::StatusOr<Batch> CopyAsync(const Batch& host, int slot) override {
    if (!host.images.is_contiguous() || !host.labels.is_contiguous()) {
      return absl::InvalidArgumentError(
          "batch copy to the GPU needs contiguous host tensors");
    }
    Batch out = host;
    const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(device_));
    out.images = at::empty(
        host.images.sizes(),
        at::TensorOptions().dtype(host.images.scalar_type()).device(device));
    out.labels = at::empty(
        host.labels.sizes(),
        at::TensorOptions().dtype(host.labels.scalar_type()).device(device));
    cudaSetDevice(device_);
    cudaStream_t compute = CurrentTorchStream(device_);
    cudaError_t e = cudaEventRecord(compute_ready_, compute);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(stream_, compute_ready_, 0);
    for (const auto& [to, from] : {std::make_pair(out.images, host.images),
                                   std::make_pair(out.labels, host.labels)}) {
      if (e == cudaSuccess) {
        RecordStream(to, stream_, device_);
        e = cudaMemcpyAsync(to.data_ptr(), from.data_ptr(), from.nbytes(),
                            cudaMemcpyHostToDevice, stream_);
      }
    }
    if (e == cudaSuccess) e = cudaEventRecord(copied_[slot], stream_);
    if (e != cudaSuccess) {
      return CudaError(
          absl::StrCat("copying batch ", host.index, " to cuda:", device_), e);
    }
    return out;
  }

  absl::Status OrderCompute(int slot) override {
    cudaSetDevice(device_);
    if (cudaError_t e =
            cudaStreamWaitEvent(CurrentTorchStream(device_), copied_[slot], 0);
        e != cudaSuccess) {
      return CudaError("ordering the compute stream after a batch copy", e);
    }
    return absl::OkStatus();
  }

  absl::Status WaitCopied(int slot, absl::Duration timeout) override {
    return Poll(copied_[slot], timeout,
                absl::StrCat("the copy of a batch to cuda:", device_));
  }

  absl::Status ReadScalarAsync(const at::Tensor& value) override {
    if (!value.is_cuda()) {
      *scalar_ = value.item<double>();
      host_value_ = true;
      return absl::OkStatus();
    }
    host_value_ = false;
    cudaSetDevice(device_);
    cudaStream_t compute = CurrentTorchStream(device_);
    // Freed after the copy is queued: the caching allocator reuses it only
    // for later work on the same stream.
    at::Tensor as_double = value.detach().reshape({1}).to(at::kDouble);
    cudaError_t e =
        cudaMemcpyAsync(scalar_, as_double.data_ptr(), sizeof(double),
                        cudaMemcpyDeviceToHost, compute);
    if (e == cudaSuccess) e = cudaEventRecord(scalar_ready_, compute);
    if (e != cudaSuccess) return CudaError("reading the loss", e);
    return absl::OkStatus();
  }

  absl::StatusOr<double> ReadScalar(absl::Duration timeout) override {
    if (!host_value_) {
      if (absl::Status s = Poll(scalar_ready_, timeout,
                                absl::StrCat("the loss from cuda:", device_));
          !s.ok()) {
        return s;
      }
    }
    return *scalar_;
  }

 private:
  // Polls `event` until it completes, fails, or `timeout` passes.
  absl::Status Poll(cudaEvent_t event, absl::Duration timeout,
                    const std::string& what) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      const cudaError_t e = cudaEventQuery(event);
      if (e == cudaSuccess) return absl::OkStatus();
      if (e != cudaErrorNotReady) return CudaError(what, e);
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(absl::StrCat(
            what, " did not finish within ", absl::FormatDuration(timeout)));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  const int device_;
  cudaStream_t stream_ = nullptr;
  std::array<cudaEvent_t, 2> copied_{nullptr, nullptr};
  cudaEvent_t compute_ready_ = nullptr;
  cudaEvent_t scalar_ready_ = nullptr;
  double* scalar_ = nullptr;  // pinned
  bool host_value_ = false;   // the last value read was a CPU tensor's
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostToDevice>> CreateCudaHostToDevice(
    int device) {
  auto copies = std::make_unique<CudaHostToDevice>(device);
  if (absl::Status s = copies->Init(); !s.ok()) return s;
  return copies;
}

#else

absl::StatusOr<std::unique_ptr<HostToDevice>> CreateCudaHostToDevice(
    int device) {
  return absl::FailedPreconditionError(absl::StrCat(
      "cuda:", device, ": gradsync was built without the CUDA runtime"));
}

#endif

}  // namespace gradsync
