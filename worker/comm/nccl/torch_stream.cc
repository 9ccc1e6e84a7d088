#include "worker/comm/nccl/torch_stream.h"

#include "gradsync/config.h"

#if GRADSYNC_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gradsync {

#if GRADSYNC_TORCH_CUDA

cudaStream_t CurrentTorchStream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device))
      .stream();
}

void RecordStream(const at::Tensor& tensor, cudaStream_t stream, int device) {
  if (!tensor.is_cuda()) return;
  c10::cuda::CUDACachingAllocator::recordStream(
      tensor.storage().data_ptr(),
      c10::cuda::getStreamFromExternal(stream,
                                       static_cast<c10::DeviceIndex>(device)));
}

#else

cudaStream_t CurrentTorchStream(int /*device*/) { return nullptr; }

void RecordStream(const at::Tensor& /*tensor*/, cudaStream_t /*stream*/,
                  int /*device*/) {}

#endif

}  // namespace gradsync
