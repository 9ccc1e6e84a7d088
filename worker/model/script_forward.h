// ScriptForward: a scripted module's forward under the contract a model
// trained by gradsync keeps: one Tensor in (the batch as the data set gives
// it), one [N, outputs] Tensor out. Anything else is INVALID_ARGUMENT at the
// first batch, naming what was found:
//   - a forward that takes other than (self, Tensor) (extra arguments,
//     another type);
//   - a forward that fails on the batch (a wrong input shape: the message
//     names the batch's shape and the module's first error line);
//   - a tuple, list, dict or other non-Tensor result, or a Tensor not
//     shaped [N, outputs] (N the batch's first dimension).
// It runs with TorchScript's graph-executor optimisation off on the
// calling thread (the setting is thread-local; fused graphs do not follow
// autocast), restoring it after.
// Thread safety: as the module's forward (one thread per module).
#pragma once

#include <torch/script.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace gradsync {

// `outputs` <= 0: any second dimension (checked to exist).
absl::StatusOr<at::Tensor> ScriptForward(torch::jit::Module& module,
                                         const at::Tensor& batch,
                                         int64_t outputs);

}  // namespace gradsync
