// CreateNcclCommunicator. The NCCL backend itself is not written yet (issue
// 4 continues); until then this reports UNIMPLEMENTED, or FAILED_PRECONDITION
// where no GPU is visible, so "auto" falls back to gloo.
#include "absl/strings/str_cat.h"
#include "gradsync/config.h"
#include "worker/comm/communicator.h"
#include "worker/devices.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const CommOptions& options, int device) {
  const DeviceReport devices = DiscoverDevices();
  if (devices.cuda.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("nccl: rank ", options.rank, " sees no GPU (",
                     devices.cuda_status, ")"));
  }
  return absl::UnimplementedError(
      "nccl: the NCCL communicator is not implemented yet; use backend gloo");
}

}  // namespace gradsync
