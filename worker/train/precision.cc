#include "worker/train/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "absl/strings/str_cat.h"

// PyTorch 2.4 made autocast's switches per device type.
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define GRADSYNC_AUTOCAST_BY_DEVICE_TYPE 1
#else
#define GRADSYNC_AUTOCAST_BY_DEVICE_TYPE 0
#endif

namespace gradsync {
namespace {

bool AutocastEnabled(bool cuda) {
#if GRADSYNC_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

at::ScalarType AutocastDtype(bool cuda) {
#if GRADSYNC_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
#else
  return cuda ? at::autocast::get_autocast_gpu_dtype()
              : at::autocast::get_autocast_cpu_dtype();
#endif
}

void SetAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
#if GRADSYNC_AUTOCAST_BY_DEVICE_TYPE
  const at::DeviceType type = cuda ? at::kCUDA : at::kCPU;
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

}  // namespace

absl::StatusOr<Precision> ParsePrecision(const std::string& name) {
  if (name == "32" || name.empty()) return Precision::k32;
  if (name == "bf16-mixed") return Precision::kBf16Mixed;
  if (name == "16-mixed") return Precision::k16Mixed;
  return absl::InvalidArgumentError(absl::StrCat(
      "precision must be 32, bf16-mixed or 16-mixed (got '", name, "')"));
}

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kBf16Mixed:
      return "bf16-mixed";
    case Precision::k16Mixed:
      return "16-mixed";
    case Precision::k32:
      break;
  }
  return "32";
}

absl::Status CheckPrecision(Precision precision, const torch::Device& device) {
  if (precision == Precision::k16Mixed && !device.is_cuda()) {
    return absl::FailedPreconditionError(
        "precision 16-mixed needs a GPU (float16 autocast with loss scaling "
        "is a CUDA feature, as in PyTorch); on the CPU use bf16-mixed or 32");
  }
  return absl::OkStatus();
}

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : active_(precision != Precision::k32), cuda_(device.is_cuda()) {
  if (!active_) return;
  was_enabled_ = AutocastEnabled(cuda_);
  was_dtype_ = AutocastDtype(cuda_);
  SetAutocast(cuda_, true,
              precision == Precision::k16Mixed ? at::kHalf : at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Leaving the outermost scope drops the casts autocast cached (as
  // torch.autocast's __exit__ does).
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetAutocast(cuda_, was_enabled_, was_dtype_);
}

}  // namespace gradsync
