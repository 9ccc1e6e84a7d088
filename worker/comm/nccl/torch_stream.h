// The two things the NCCL path needs from LibTorch's CUDA side, in one
// place, so that everything else builds against the CUDA runtime alone:
//   CurrentTorchStream: the stream LibTorch's current thread enqueues its
//     kernels on for `device` (c10::cuda::getCurrentCUDAStream): the
//     compute stream the NCCL stream must be ordered with;
//   RecordStream: tells LibTorch's caching allocator that `tensor` is in use
//     on `stream`, so its memory is not handed out again until the work
//     enqueued there so far is done (c10's recordStream, as
//     ProcessGroupNCCL does for every input).
// Built against a CUDA LibTorch (GRADSYNC_TORCH_CUDA) they call c10;
// against a CPU-only LibTorch, which has no CUDA tensors, they return the
// legacy default stream and do nothing.
// Thread-safe (the current stream is per thread, as in c10).
#pragma once

#include <ATen/core/Tensor.h>
#include <cuda_runtime_api.h>

namespace gradsync {

cudaStream_t CurrentTorchStream(int device);
void RecordStream(const at::Tensor& tensor, cudaStream_t stream, int device);

}  // namespace gradsync
