#include "worker/train/foreach_sgd.h"

#include <memory>
#include <utility>

#include "worker/model/optimizer_state_key.h"

namespace gradsync {

torch::Tensor ForeachSgd::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& options =
        static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    if (options.weight_decay() != 0) {
      grads = at::_foreach_add(grads, params, options.weight_decay());
    }
    if (options.momentum() != 0) {
      // Buffers that exist take the update; a parameter's first step makes
      // its buffer a copy of the gradient.
      std::vector<torch::Tensor> bufs(params.size()), old_bufs, old_grads;
      for (size_t i = 0; i < params.size(); ++i) {
        const OptimizerStateKey key = OptimizerStateKeyOf(params[i]);
        auto found = state_.find(key);
        if (found == state_.end()) {
          bufs[i] = grads[i].clone().detach();
          auto fresh = std::make_unique<torch::optim::SGDParamState>();
          fresh->momentum_buffer(bufs[i]);
          state_.emplace(key, std::move(fresh));
          continue;
        }
        bufs[i] = static_cast<torch::optim::SGDParamState&>(*found->second)
                      .momentum_buffer();
        old_bufs.push_back(bufs[i]);
        old_grads.push_back(grads[i]);
      }
      if (!old_bufs.empty()) {
        at::_foreach_mul_(old_bufs, options.momentum());
        at::_foreach_add_(old_bufs, old_grads, 1 - options.dampening());
      }
      grads = options.nesterov()
                  ? at::_foreach_add(grads, bufs, options.momentum())
                  : std::move(bufs);
    }
    at::_foreach_add_(params, grads, -options.lr());
  }
  return loss;
}

}  // namespace gradsync
