// FusedAdam: torch::optim::Adam whose step makes one pass over each
// parameter's values, gradient and moments on the CPU, instead of LibTorch's
// six tensor operations (six passes over memory); PyTorch 2 offers the same
// as Adam(fused=True). The same update per element, in float32 and in the
// order LibTorch 1.13's Adam computes it (up to rounding: ATen's vector
// kernels may fuse a multiply and an add):
//   m = m * b1 + (1 - b1) * g;   v = v * b2 + (1 - b2) * g * g
//   p = p + (-lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// (g first gets weight_decay * p added). The state is Adam's own
// (AdamParamState, keyed as Adam keys it), so checkpoints and
// dynamic_cast<torch::optim::Adam*> see an Adam. CUDA parameters, amsgrad
// and non-float32 parameters take Adam's own step.
//
// Thread safety: as torch::optim::Adam (one thread).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace gradsync {

class FusedAdam : public torch::optim::Adam {
 public:
  FusedAdam(std::vector<torch::Tensor> params,
            torch::optim::AdamOptions options)
      : torch::optim::Adam(std::move(params), options) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace gradsync
