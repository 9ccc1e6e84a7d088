#include "worker/train/fused_adam.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "worker/model/optimizer_state_key.h"

namespace gradsync {
namespace {

// One element at a time in Adam's float32 operations; contiguous arrays
// (the compiler vectorises this loop: each operation is exact IEEE
// arithmetic, so lanes round as the scalar code does).
void Update(float* __restrict p, const float* __restrict g, float* __restrict m,
            float* __restrict v, int64_t n, float beta1, float one_minus_beta1,
            float beta2, float one_minus_beta2, float sqrt_bc2, float eps,
            float neg_step, float weight_decay) {
  for (int64_t i = 0; i < n; ++i) {
    float grad = g[i];
    if (weight_decay != 0) grad = grad + weight_decay * p[i];
    const float mi = m[i] * beta1 + one_minus_beta1 * grad;
    const float vi = v[i] * beta2 + one_minus_beta2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / sqrt_bc2 + eps;
    p[i] = p[i] + neg_step * mi / denom;
  }
}

bool Fusable(const torch::Tensor& p, const torch::Tensor& grad,
             const torch::optim::AdamOptions& options) {
  return p.device().is_cpu() && p.scalar_type() == torch::kFloat &&
         p.is_non_overlapping_and_dense() && !options.amsgrad() &&
         !grad.is_sparse() && grad.scalar_type() == torch::kFloat;
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      const auto& options =
          static_cast<const torch::optim::AdamOptions&>(group.options());
      if (p.grad().defined() && !Fusable(p, p.grad(), options)) {
        return torch::optim::Adam::step(std::move(closure));
      }
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options =
        static_cast<const torch::optim::AdamOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const OptimizerStateKey key = OptimizerStateKeyOf(p);
      auto found = state_.find(key);
      if (found == state_.end()) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        found = state_.emplace(key, std::move(fresh)).first;
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*found->second);
      state.step(state.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      // One layout for all four: the parameter's (channels-last included);
      // a moment or gradient laid out otherwise is made to match first.
      auto matching = [&](torch::Tensor& t) {
        if (t.strides() != p.strides()) {
          torch::Tensor laid_out = torch::empty_like(p);
          laid_out.copy_(t);
          t = laid_out;
        }
      };
      torch::Tensor grad = p.grad();
      matching(grad);
      matching(state.exp_avg());
      matching(state.exp_avg_sq());
      Update(p.data_ptr<float>(), grad.data_ptr<float>(),
             state.exp_avg().data_ptr<float>(),
             state.exp_avg_sq().data_ptr<float>(), p.numel(),
             static_cast<float>(beta1), static_cast<float>(1 - beta1),
             static_cast<float>(beta2), static_cast<float>(1 - beta2),
             static_cast<float>(std::sqrt(bias_correction2)),
             static_cast<float>(options.eps()),
             static_cast<float>(-options.lr() / bias_correction1),
             static_cast<float>(options.weight_decay()));
    }
  }
  return loss;
}

}  // namespace gradsync
