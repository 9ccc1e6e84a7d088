// CreateCommunicator: the factory over the Communicator backends
// (communicator.h); the interface itself includes none of them.
// Thread safety: any thread; each call makes its own communicator.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"

namespace gradsync {

// The one way to make a communicator. All ranks call it with the same
// backend, store and size; it returns once every rank is connected, or
// fails at the timeout naming the ranks that never arrived.
// INVALID_ARGUMENT for a bad rank/size or no store; UNIMPLEMENTED for a
// backend this build lacks (GRADSYNC_WITH_GLOO / GRADSYNC_WITH_NCCL); for
// kNccl, FAILED_PRECONDITION when this process sees no GPU. Backend details:
// gloo/gloo_communicator.h, nccl/nccl_communicator.h.
absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    Backend backend, const CommOptions& options);

}  // namespace gradsync
