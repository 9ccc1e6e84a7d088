#include "worker/train/grad_scaler.h"

#include <torch/torch.h>

#include <cmath>

namespace gradsync {

torch::Tensor GradScaler::Scale(const torch::Tensor& loss) const {
  return loss * state_.scale;
}

absl::StatusOr<bool> GradScaler::UnscaleAndCheck(
    const std::vector<torch::Tensor>& params, Communicator& comm) {
  // As GradScaler: the reciprocal in double, applied in float32.
  const double inv_scale =
      static_cast<double>(static_cast<float>(1.0 / state_.scale));
  torch::Tensor found;  // on the gradients' device: no sync per gradient
  for (const torch::Tensor& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    g.mul_(inv_scale);
    torch::Tensor bad = g.isfinite().logical_not().any().to(torch::kFloat);
    found = found.defined() ? found.add_(bad) : bad;
  }
  // One host sync and one tiny collective per step: every rank takes the
  // same decision even if only one overflowed.
  torch::Tensor agreed = found.defined()
                             ? found.reshape({1}).to(torch::kCPU).contiguous()
                             : torch::zeros({1}, torch::kFloat);
  if (absl::Status s = comm.AllReduce(agreed, ReduceOp::kSum); !s.ok()) {
    return s;
  }
  return agreed.item<float>() > 0;
}

void GradScaler::Update(bool found_inf) {
  if (found_inf) {
    state_.scale *= state_.backoff_factor;
    state_.growth_tracker = 0;
    return;
  }
  if (++state_.growth_tracker == state_.growth_interval) {
    const double grown = state_.scale * state_.growth_factor;
    // The scale is a float32 in PyTorch; it stays where float32 is finite.
    if (std::isfinite(static_cast<float>(grown))) state_.scale = grown;
    state_.growth_tracker = 0;
  }
}

}  // namespace gradsync
