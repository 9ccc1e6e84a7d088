// The NCCL backend of Communicator (../communicator.h), for the GPU
// options.cuda_device. UNIMPLEMENTED when gradsync was built without NCCL,
// FAILED_PRECONDITION when this process sees no GPU, INVALID_ARGUMENT for a
// device this host does not have. See nccl_communicator.cc for the
// bootstrap, the polling deadline and the abort.
// Thread safety: as Communicator.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const CommOptions& options);

}  // namespace gradsync
