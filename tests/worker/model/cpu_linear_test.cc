#include "worker/model/cpu_linear.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gradsync {
namespace {

// Whether the autograd graph behind t has a convolution node.
bool GraphHasConvolution(const torch::Tensor& t) {
  std::vector<std::shared_ptr<torch::autograd::Node>> todo = {t.grad_fn()};
  while (!todo.empty()) {
    auto node = todo.back();
    todo.pop_back();
    if (node == nullptr) continue;
    if (node->name().find("Convolution") != std::string::npos) return true;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function);
  }
  return false;
}

TEST(CpuLinearTest, FloatCpuBatchesRunAsAConvolution) {
  const char* env = std::getenv("GRADSYNC_CPU_LINEAR");
  if (env != nullptr && std::string(env) == "aten") {
    GTEST_SKIP() << "GRADSYNC_CPU_LINEAR=aten turns the oneDNN path off";
  }
  ASSERT_TRUE(at::hasMKLDNN()) << "Debian's LibTorch has MKL-DNN";
  ASSERT_TRUE(CpuLinearUsesOneDnn());
  torch::nn::Linear fc(8, 3);
  EXPECT_TRUE(GraphHasConvolution(LinearForward(fc, torch::randn({4, 8}))));
  EXPECT_FALSE(GraphHasConvolution(fc->forward(torch::randn({4, 8}))));
}

// The oneDNN path against the module's own forward: outputs and all three
// gradients agree up to float summation order.
TEST(CpuLinearTest, MatchesTheModuleForwardAndBackward) {
  torch::manual_seed(3);
  for (auto [n, in, out] : {std::tuple{100, 2304, 600}, std::tuple{7, 13, 5},
                            std::tuple{1, 1, 1}}) {
    torch::nn::Linear fc(in, out);
    const torch::Tensor x0 = torch::randn({n, in});
    const torch::Tensor g = torch::randn({n, out});

    torch::Tensor x1 = x0.clone().requires_grad_(true);
    torch::Tensor want = fc->forward(x1);
    want.backward(g);
    const torch::Tensor want_dw = fc->weight.grad().clone();
    const torch::Tensor want_db = fc->bias.grad().clone();
    fc->zero_grad();

    torch::Tensor x2 = x0.clone().requires_grad_(true);
    torch::Tensor got = LinearForward(fc, x2);
    got.backward(g);
    ASSERT_EQ(got.sizes(), want.sizes());
    const double tol = 1e-4 * std::sqrt(static_cast<double>(in));
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, tol)) << n << "x" << in;
    EXPECT_TRUE(torch::allclose(x2.grad(), x1.grad(), 1e-4, tol));
    EXPECT_TRUE(torch::allclose(fc->weight.grad(), want_dw, 1e-4, tol));
    EXPECT_TRUE(torch::allclose(fc->bias.grad(), want_db, 1e-4, tol));
  }
}

TEST(CpuLinearTest, OtherInputsTakeTheModuleForward) {
  torch::nn::Linear fc(4, 3);
  // Exactly the module's result (same kernel) for what the fast path skips.
  const torch::Tensor empty = torch::randn({0, 4});
  EXPECT_TRUE(torch::equal(LinearForward(fc, empty), fc->forward(empty)));
  const torch::Tensor three_d = torch::randn({2, 5, 4});
  EXPECT_TRUE(torch::equal(LinearForward(fc, three_d), fc->forward(three_d)));
  torch::nn::Linear fc64(4, 3);
  fc64->to(torch::kFloat64);
  const torch::Tensor x64 = torch::randn({2, 4}, torch::kFloat64);
  EXPECT_TRUE(torch::equal(LinearForward(fc64, x64), fc64->forward(x64)));
}

TEST(CpuLinearTest, NoBiasWorks) {
  torch::nn::Linear fc(torch::nn::LinearOptions(6, 2).bias(false));
  const torch::Tensor x = torch::randn({3, 6});
  EXPECT_TRUE(
      torch::allclose(LinearForward(fc, x), fc->forward(x), 1e-5, 1e-5));
}

}  // namespace
}  // namespace gradsync
