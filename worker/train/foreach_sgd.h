// ForeachSgd: torch::optim::SGD whose step updates all parameters with a
// few multi-tensor (_foreach) kernels instead of LibTorch's two or three
// kernels per parameter, as PyTorch's SGD does by default on CUDA
// (foreach=True). On a GPU the per-parameter step is hundreds of tiny
// launches (ResNet-18: 62 parameters); each costs launch time on the CPU and
// a few microseconds on the GPU. The update is SGD's own, in its order:
//   g = grad + weight_decay * p
//   buf = g (first step) or buf * momentum + (1 - dampening) * g
//   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
//   p = p - lr * g
// The state is SGD's (SGDParamState, keyed as SGD keys it), so checkpoints
// and dynamic_cast<torch::optim::SGD*> see an SGD. The trainer uses it for
// CUDA parameters; on the CPU the _foreach ops loop per tensor anyway.
//
// Thread safety: as torch::optim::SGD (one thread).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace gradsync {

class ForeachSgd : public torch::optim::SGD {
 public:
  ForeachSgd(std::vector<torch::Tensor> params,
             torch::optim::SGDOptions options)
      : torch::optim::SGD(std::move(params), options) {}

  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace gradsync
