// UseChannelsLast: convolution weights (a 1-channel one included) move to
// NHWC, the model computes the same outputs and gradients, and a checkpoint
// of it holds plain contiguous tensors that a NCHW model restores exactly.
#include "worker/model/memory_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "worker/model/builtin_model.h"
#include "worker/model/checkpoint.h"
#include "worker/model/optimizer_state_key.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<ImageClassifier> FashionCnn() {
  ModelShape shape;  // 1x28x28, 10 classes
  auto model = MakeModel("fashion_cnn", shape);
  EXPECT_TRUE(model.ok()) << model.status();
  return *model;
}

// A second fashion_cnn with `from`'s parameters and buffers.
std::shared_ptr<ImageClassifier> CopyOf(ImageClassifier& from) {
  auto to = FashionCnn();
  torch::NoGradGuard no_grad;
  auto a = from.parameters(), b = to->parameters();
  for (size_t i = 0; i < a.size(); ++i) b[i].copy_(a[i]);
  auto x = from.buffers(), y = to->buffers();
  for (size_t i = 0; i < x.size(); ++i) y[i].copy_(x[i]);
  return to;
}

TEST(MemoryFormatTest, ConvolutionWeightsMoveAndLinearOnesStay) {
  auto model = FashionCnn();
  const auto before = model->named_parameters();
  std::vector<const c10::TensorImpl*> impls;
  for (const auto& p : before) impls.push_back(p.value().unsafeGetTensorImpl());
  UseChannelsLast(model->parameters());
  const auto after = model->named_parameters();
  size_t i = 0;
  for (const auto& p : after) {
    // The optimizer and reducer hold these tensors: same objects.
    EXPECT_EQ(p.value().unsafeGetTensorImpl(), impls[i++]) << p.key();
    EXPECT_EQ(IsChannelsLast(p.value()), p.value().dim() == 4) << p.key();
  }
  // layer1's weight is [32, 1, 3, 3]: contiguous() alone would not move it.
  EXPECT_TRUE(IsChannelsLast(after["layer1.0.weight"]));
  EXPECT_FALSE(IsChannelsLast(after["fc1.weight"]));
}

TEST(MemoryFormatTest, OutputsAndGradientsAreTheSame) {
  torch::manual_seed(3);
  auto nchw = FashionCnn();
  auto nhwc = CopyOf(*nchw);
  UseChannelsLast(nhwc->parameters());
  // Eval mode: no dropout draws, so both see the same function.
  nchw->eval();
  nhwc->eval();
  const torch::Tensor x = torch::rand({8, 1, 28, 28});
  const torch::Tensor y = torch::randint(10, {8});
  const torch::Tensor out_a = nchw->forward(x), out_b = nhwc->forward(x);
  EXPECT_TRUE(torch::allclose(out_a, out_b, 1e-5, 1e-5));
  torch::nn::functional::cross_entropy(out_a, y).backward();
  torch::nn::functional::cross_entropy(out_b, y).backward();
  const auto a = nchw->named_parameters(), b = nhwc->named_parameters();
  for (const auto& p : a) {
    EXPECT_TRUE(
        torch::allclose(p.value().grad(), b[p.key()].grad(), 1e-4, 1e-6))
        << p.key();
  }
}

TEST(MemoryFormatTest, CheckpointsHoldContiguousTensors) {
  const std::string dir =
      (fs::path(::testing::TempDir()) /
       ("gradsync_memory_format_test_" + std::to_string(::getpid())))
          .string();
  fs::remove_all(dir);
  auto nhwc = FashionCnn();
  UseChannelsLast(nhwc->parameters());
  torch::optim::Adam adam(nhwc->parameters(), torch::optim::AdamOptions(0.1));
  nhwc->forward(torch::rand({4, 1, 28, 28})).sum().backward();
  adam.step();
  BuiltinModel trainable(nhwc);
  auto path = WriteCheckpoint(trainable, adam, TrainPosition{}, {}, dir);
  ASSERT_TRUE(path.ok()) << path.status();
  auto bytes = ReadFileBytes(*path);
  ASSERT_TRUE(bytes.ok());
  const auto weights =
      torch::pickle_load(*bytes).toGenericDict().at("model").toGenericDict();
  for (const auto& item : weights) {
    EXPECT_TRUE(item.value().toTensor().is_contiguous())
        << item.key().toStringRef();
  }
  // A PyTorch-layout model restores the same values...
  auto nchw = FashionCnn();
  torch::optim::Adam nchw_adam(nchw->parameters(),
                               torch::optim::AdamOptions(0.1));
  BuiltinModel nchw_model(nchw);
  ASSERT_TRUE(RestoreCheckpoint(*bytes, *path, nchw_model, nchw_adam).ok());
  const auto a = nhwc->named_parameters(), b = nchw->named_parameters();
  for (const auto& p : a) {
    EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  }
  // ...and a channels-last one gets its optimizer state in its own layout.
  auto again = FashionCnn();
  UseChannelsLast(again->parameters());
  torch::optim::Adam again_adam(again->parameters(),
                                torch::optim::AdamOptions(0.1));
  BuiltinModel again_model(again);
  ASSERT_TRUE(RestoreCheckpoint(*bytes, *path, again_model, again_adam).ok());
  const torch::Tensor conv = again->named_parameters()["layer1.0.weight"];
  const auto& state = static_cast<torch::optim::AdamParamState&>(
      *again_adam.state().at(OptimizerStateKeyOf(conv)));
  EXPECT_TRUE(IsChannelsLast(state.exp_avg()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradsync
