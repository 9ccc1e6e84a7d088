// CudaError: a failed CUDA runtime call as a Status naming the call, for
// the NCCL communicator and the trainer's host-to-device copies (the two
// places that call the CUDA runtime). Only where GRADSYNC_WITH_NCCL builds.
// Thread safety: a pure function.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

// INTERNAL: "CUDA: <what>: <the runtime's message>".
inline absl::Status CudaError(const std::string& what, cudaError_t e) {
  return absl::InternalError(
      absl::StrCat("CUDA: ", what, ": ", cudaGetErrorString(e)));
}

}  // namespace gradsync
