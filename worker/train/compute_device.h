// ComputeDevice: where a rank computes, checked before any connection so
// that a rank that cannot train says why at once, not as a peer's timeout.
// Thread safety: a pure function (asks LibTorch which GPUs it sees).
#pragma once

#include <torch/types.h>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"

namespace gradsync {

// Where a rank of `backend` computes: cuda:`cuda_device` for NCCL, the CPU
// for gloo. FAILED_PRECONDITION for NCCL when this LibTorch has no CUDA (an
// nccl job never silently trains on the CPU).
absl::StatusOr<torch::Device> ComputeDevice(Backend backend, int cuda_device);

}  // namespace gradsync
