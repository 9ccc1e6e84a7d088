// CreateCudaHostToDevice: device_feeder.h's HostToDevice on one GPU, through
// the CUDA runtime.
//
// Batch copies run on a non-blocking stream of their own. Before each copy
// that stream waits on an event recorded on LibTorch's current (compute)
// stream: the copy's device memory comes from the compute stream's pool, so
// it must not be written while earlier compute work may still use it. An
// event per slot, recorded after the copy, is what the compute stream waits
// on (OrderCompute) and what the host polls (WaitCopied); the device tensors
// are also recorded as in use on the copy stream (c10's recordStream), so
// the caching allocator never hands their memory out while a copy writes
// it. The loss read goes to pinned host memory on the compute stream,
// followed by an event the host polls. Every wait polls and gives up at its
// timeout with DEADLINE_EXCEEDED naming what it waited for.
//
// Built where the CUDA runtime is (GRADSYNC_WITH_NCCL); elsewhere Create
// fails with FAILED_PRECONDITION. Thread safety: one thread, as
// DeviceFeeder.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "worker/train/device_feeder.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<HostToDevice>> CreateCudaHostToDevice(
    int device);

}  // namespace gradsync
