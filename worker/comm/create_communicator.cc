#include "worker/comm/create_communicator.h"

#include "gradsync/config.h"
#include "worker/comm/nccl/nccl_communicator.h"

#if GRADSYNC_WITH_GLOO
#include "worker/comm/gloo/gloo_communicator.h"
#endif

namespace gradsync {

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    Backend backend, const CommOptions& options) {
  switch (backend) {
    case Backend::kGloo:
#if GRADSYNC_WITH_GLOO
      return CreateGlooCommunicator(options, GlooOptionsFromEnv());
#else
      return absl::UnimplementedError(
          "backend gloo: this build has no gloo (rebuild with "
          "-DGRADSYNC_WITH_GLOO=ON), so it runs only NCCL jobs on GPUs");
#endif
    case Backend::kNccl:
      return CreateNcclCommunicator(options);
  }
  return absl::InvalidArgumentError("unknown communicator backend");
}

}  // namespace gradsync
