#include "worker/train/compute_device.h"

#include <torch/cuda.h>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace gradsync {

absl::StatusOr<torch::Device> ComputeDevice(Backend backend, int cuda_device) {
  if (backend != Backend::kNccl) return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    return absl::FailedPreconditionError(
        "backend nccl computes on the GPU, but this worker's LibTorch has no "
        "CUDA (torch::cuda::is_available() is false): run the job with "
        "backend gloo, or the worker with a CUDA build of LibTorch");
  }
  if (cuda_device < 0 ||
      cuda_device >= static_cast<int>(torch::cuda::device_count())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cuda:%d does not exist: LibTorch sees %d GPU(s)",
                        cuda_device, torch::cuda::device_count()));
  }
  return torch::Device(torch::kCUDA, static_cast<int8_t>(cuda_device));
}

}  // namespace gradsync
