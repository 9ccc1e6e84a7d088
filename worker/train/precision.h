// Training precision, with PyTorch Lightning's names:
//   "32"          float32 throughout (the default)
//   "bf16-mixed"  forward and loss under autocast to bfloat16 (CPU and
//                 CUDA); parameters, gradients and the optimizer stay
//                 float32; no loss scaling (bf16 has float32's range)
//   "16-mixed"    autocast to float16 with dynamic loss scaling
//                 (grad_scaler.h); CUDA only, as in PyTorch: on the CPU it
//                 is refused with the reason
// AutocastScope turns autocast on for one forward pass, like
// torch.autocast(device_type, dtype) in Python.
//
// Thread safety: autocast state is per thread (as in PyTorch); an
// AutocastScope lives on the thread that runs the forward pass.
#pragma once

#include <torch/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/train/train_spec.h"

namespace gradsync {

// INVALID_ARGUMENT naming the accepted values for anything else.
absl::StatusOr<Precision> ParsePrecision(const std::string& name);
const char* PrecisionName(Precision precision);

// OK when `precision` can train on `device`; FAILED_PRECONDITION with the
// reason otherwise (16-mixed on a CPU).
absl::Status CheckPrecision(Precision precision, const torch::Device& device);

// Autocast on `device` to the precision's 16-bit type from construction to
// destruction (nothing for "32"); the previous state comes back after.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace gradsync
