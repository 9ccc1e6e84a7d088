// ForeachSgd takes LibTorch's SGD steps: the same parameters and momentum
// buffers after several steps with the same gradients, with and without
// momentum, dampening, Nesterov and weight decay, when a parameter gets its
// first gradient late, and on a GPU where there is one.
#include "worker/train/foreach_sgd.h"

#include <gtest/gtest.h>

#include "worker/model/optimizer_state_key.h"

namespace gradsync {
namespace {

struct Trained {
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

template <typename Optimizer>
Trained Steps(const torch::optim::SGDOptions& options, torch::Device device) {
  torch::manual_seed(9);
  Trained run;
  for (auto shape : {std::vector<int64_t>{8, 3, 3, 3}, {20, 30}, {7}}) {
    run.params.push_back(torch::randn(shape).to(device).requires_grad_(true));
  }
  run.optimizer = std::make_unique<Optimizer>(run.params, options);
  torch::manual_seed(10);
  for (int s = 0; s < 4; ++s) {
    for (size_t i = 0; i < run.params.size(); ++i) {
      torch::Tensor& p = run.params[i];
      // The last parameter has no gradient on the first step.
      p.mutable_grad() = i == 2 && s == 0 ? torch::Tensor()
                                          : torch::randn(p.sizes()).to(device);
    }
    run.optimizer->step();
  }
  return run;
}

void ExpectSameSteps(const torch::optim::SGDOptions& options,
                     torch::Device device = torch::kCPU) {
  const Trained ours = Steps<ForeachSgd>(options, device);
  const Trained plain = Steps<torch::optim::SGD>(options, device);
  ASSERT_EQ(ours.optimizer->state().size(), plain.optimizer->state().size());
  for (size_t i = 0; i < ours.params.size(); ++i) {
    const torch::Tensor a = ours.params[i].detach().cpu();
    const torch::Tensor b = plain.params[i].detach().cpu();
    EXPECT_TRUE(torch::allclose(a, b, 1e-6, 1e-6))
        << "parameter " << i << " max diff "
        << (a - b).abs().max().item<float>();
    if (options.momentum() == 0) continue;
    auto buffer = [&](const Trained& run) {
      return static_cast<const torch::optim::SGDParamState&>(
                 *run.optimizer->state().at(OptimizerStateKeyOf(run.params[i])))
          .momentum_buffer()
          .cpu();
    };
    EXPECT_TRUE(torch::allclose(buffer(ours), buffer(plain), 1e-6, 1e-6))
        << "momentum buffer " << i;
  }
}

TEST(ForeachSgdTest, PlainSgd) {
  ExpectSameSteps(torch::optim::SGDOptions(0.1));
}

TEST(ForeachSgdTest, MomentumAndWeightDecay) {
  ExpectSameSteps(
      torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4));
}

TEST(ForeachSgdTest, NesterovAndDampening) {
  ExpectSameSteps(torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  ExpectSameSteps(torch::optim::SGDOptions(0.05).momentum(0.5).dampening(0.3));
}

TEST(ForeachSgdTest, IsAnSgdForCheckpoints) {
  const Trained ours = Steps<ForeachSgd>(
      torch::optim::SGDOptions(0.1).momentum(0.9), torch::kCPU);
  EXPECT_NE(dynamic_cast<torch::optim::SGD*>(ours.optimizer.get()), nullptr);
  EXPECT_EQ(ours.optimizer->state().size(), 3u);
}

TEST(ForeachSgdTest, OnAGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ExpectSameSteps(
      torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4),
      torch::kCUDA);
}

}  // namespace
}  // namespace gradsync
