// FusedAdam takes LibTorch's Adam steps: the same parameters (up to
// rounding) and the same state after several steps with the same
// gradients, for a channels-last 4-D parameter whose gradient comes in
// another layout, with and without weight decay; what it cannot fuse
// (amsgrad) is Adam's own step, bit for bit.
#include "worker/train/fused_adam.h"

#include <gtest/gtest.h>

#include "worker/model/memory_format.h"
#include "worker/model/optimizer_state_key.h"

namespace gradsync {
namespace {

struct Run {
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

template <typename Optimizer>
Run Steps(const torch::optim::AdamOptions& options, int steps) {
  torch::manual_seed(9);
  Run run;
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3));
  UseChannelsLast(conv->parameters());
  run.params = {conv->weight, torch::randn({20, 30}).requires_grad_(true),
                torch::randn({7}).requires_grad_(true)};
  run.optimizer = std::make_unique<Optimizer>(run.params, options);
  torch::manual_seed(10);
  for (int s = 0; s < steps; ++s) {
    for (torch::Tensor& p : run.params) {
      // Plain contiguous gradients, also for the channels-last weight.
      p.mutable_grad() = torch::randn(p.sizes());
    }
    run.optimizer->step();
  }
  return run;
}

void ExpectSameSteps(const torch::optim::AdamOptions& options, double rtol,
                     double atol) {
  const Run fused = Steps<FusedAdam>(options, 5);
  const Run plain = Steps<torch::optim::Adam>(options, 5);
  for (size_t i = 0; i < fused.params.size(); ++i) {
    const torch::Tensor a = fused.params[i].detach();
    const torch::Tensor b = plain.params[i].detach();
    EXPECT_TRUE(torch::allclose(a, b, rtol, atol))
        << "parameter " << i << " max diff "
        << (a - b).abs().max().item<float>();
  }
  EXPECT_TRUE(IsChannelsLast(fused.params[0]));
  // Adam's state, keyed as Adam keys it, step counts included.
  EXPECT_NE(dynamic_cast<torch::optim::Adam*>(fused.optimizer.get()), nullptr);
  ASSERT_EQ(fused.optimizer->state().size(), 3u);
  for (const torch::Tensor& p : fused.params) {
    const auto& s = static_cast<const torch::optim::AdamParamState&>(
        *fused.optimizer->state().at(OptimizerStateKeyOf(p)));
    EXPECT_EQ(s.step(), 5);
    EXPECT_EQ(s.exp_avg().sizes(), p.sizes());
  }
}

TEST(FusedAdamTest, StepsAsLibTorchAdam) {
  ExpectSameSteps(torch::optim::AdamOptions(1e-3), 1e-6, 1e-7);
}

TEST(FusedAdamTest, StepsAsLibTorchAdamWithWeightDecay) {
  ExpectSameSteps(torch::optim::AdamOptions(1e-2).weight_decay(0.1), 1e-6,
                  1e-7);
}

TEST(FusedAdamTest, AmsgradIsAdamsOwnStep) {
  ExpectSameSteps(torch::optim::AdamOptions(1e-3).amsgrad(true), 0, 0);
}

}  // namespace
}  // namespace gradsync
