// ScriptModel, a user's TorchScript module as the trainer holds it:
// LoadScriptModel refuses every hostile or broken file before any of its
// code runs (nothing written); a plain module loads and computes [N, 10];
// buffers named non-persistent in the archive stay out of the state_dict;
// a module's own loss(output, target) is found, run and shape-checked.
// Files from make_model_files.py (Debian's PyTorch; skipped without it).
#include "worker/model/script_model.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fakes/model_files.h"
#include "worker/model/layout_probe.h"
#include "worker/model/memory_format.h"

namespace gradsync {
namespace {

using testing::ModelFiles;

class ScriptModelTest : public testing::ModelFilesTest {
 protected:
  static absl::StatusOr<std::unique_ptr<ScriptModel>> Load(
      const std::string& name, int64_t outputs = 0) {
    return LoadScriptModel(ModelFiles::Get().Read(name), outputs);
  }
};

TEST_F(ScriptModelTest, EveryHostileFileIsRefusedBeforeItsCodeRuns) {
  const struct {
    const char* file;
    absl::StatusCode code;
    const char* says;
  } cases[] = {
      {"setstate.pt", absl::StatusCode::kInvalidArgument, "__setstate__"},
      {"bomb.pt", absl::StatusCode::kInvalidArgument, "inflate"},
      {"truncated.pt", absl::StatusCode::kInvalidArgument, "model file"},
      {"global.pt", absl::StatusCode::kInvalidArgument, "system"},
      {"save_forward.pt", absl::StatusCode::kFailedPrecondition, "aten::save"},
      {"from_file.pt", absl::StatusCode::kFailedPrecondition,
       "aten::from_file"},
      {"save_hook.pt", absl::StatusCode::kFailedPrecondition, "save_hook"},
      {"frozen.pt", absl::StatusCode::kInvalidArgument, "nothing to train"},
      {"traced_dropout.pt", absl::StatusCode::kFailedPrecondition,
       "constant 'train'"},
      {"bad_loss.pt", absl::StatusCode::kInvalidArgument,
       "loss must take (self, Tensor output, Tensor target)"},
      {"newer_op.pt", absl::StatusCode::kFailedPrecondition,
       "scripted by PyTorch 9.9.0): "},
  };
  for (const auto& c : cases) {
    auto loaded = Load(c.file);
    EXPECT_EQ(loaded.status().code(), c.code)
        << c.file << ": " << loaded.status();
    EXPECT_NE(loaded.status().message().find(c.says), std::string::npos)
        << c.file << ": " << loaded.status();
  }
  EXPECT_FALSE(std::filesystem::exists(ModelFiles::Get().path("pwned")));
  EXPECT_FALSE(std::filesystem::exists(ModelFiles::Get().path("leak")));
}

TEST_F(ScriptModelTest, APlainModuleTrainsAsAModel) {
  auto model = Load("good.pt", 10);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->HasLoss());
  EXPECT_FALSE((*model)->ChannelsLastSafe());
  std::vector<std::string> names;
  for (const NamedTensor& t : StateTensors(**model)) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "conv.weight", "conv.bias", "bn.weight", "bn.bias",
                       "fc.weight", "fc.bias", "bn.running_mean",
                       "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(TrainableParameters(**model).size(), 6u);
  (*model)->SetTraining(true);
  auto out = (*model)->Forward(torch::randn({3, 1, 8, 8}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sizes(), (std::vector<int64_t>{3, 10}));
  // Batch norm ran in training mode: it counted the batch.
  const NamedTensor counted = StateTensors(**model).back();
  EXPECT_EQ(counted.value.item<int64_t>(), 1);
  // A wrong width is the contract's error, at the first batch.
  auto narrow = Load("good.pt", 3);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ((*narrow)->Forward(torch::randn({3, 1, 8, 8})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ScriptModelTest, ChannelsLastOnlyWhereAProbeShowsTheSameFunction) {
  // flatten() copies a channels-last activation: the probe agrees.
  auto flat = Load("good.pt", 10);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_TRUE(ProbeChannelsLast(**flat, ProbeBatch(2, 1, 8, 8)));
  const NamedTensor conv = (*flat)->NamedParameters()[0];
  EXPECT_TRUE(IsChannelsLast(conv.value)) << conv.name;
  EXPECT_FALSE(conv.value.grad().defined());  // the probe's are cleared
  // view() refuses one: the module stays contiguous and works as before.
  auto viewed = Load("viewed.pt", 10);
  ASSERT_TRUE(viewed.ok()) << viewed.status();
  EXPECT_FALSE(ProbeChannelsLast(**viewed, ProbeBatch(2, 1, 8, 8)));
  EXPECT_FALSE(IsChannelsLast((*viewed)->NamedParameters()[0].value));
  EXPECT_TRUE((*viewed)->Forward(ProbeBatch(3, 1, 8, 8)).ok());
}

// TorchScript can bypass autocast where graphs are fused; with the
// executor's optimisation off (ScriptForward), bf16 autocast reaches the
// module's convolution and linear layers as it does in eager PyTorch.
TEST_F(ScriptModelTest, Bf16AutocastReachesTheModulesLayers) {
  auto model = Load("good.pt", 10);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->SetTraining(false);
  const torch::Tensor batch = ProbeBatch(4, 1, 8, 8);
  auto fp32 = (*model)->Forward(batch);
  ASSERT_TRUE(fp32.ok());
  at::autocast::set_cpu_enabled(true);
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  auto bf16 = (*model)->Forward(batch);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(fp32->scalar_type(), at::kFloat);
  EXPECT_EQ(bf16->scalar_type(), at::kBFloat16);
  EXPECT_FALSE(torch::equal(bf16->to(at::kFloat), *fp32));
  EXPECT_TRUE(torch::allclose(bf16->to(at::kFloat), *fp32, 0.05, 0.05));
}

TEST_F(ScriptModelTest, NonPersistentBuffersStayOutOfTheStateDict) {
  auto model = Load("buffers.pt");
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::string> state, all;
  for (const NamedTensor& t : StateTensors(**model)) state.push_back(t.name);
  for (const NamedTensor& t : (*model)->NamedBuffers()) all.push_back(t.name);
  EXPECT_EQ(state, (std::vector<std::string>{"fc.weight", "fc.bias", "keep"}));
  EXPECT_EQ(all, (std::vector<std::string>{"keep", "scratch"}));
}

TEST_F(ScriptModelTest, AModulesOwnLossIsUsed) {
  auto model = Load("own_loss.pt");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->HasLoss());
  const torch::Tensor out = torch::randn({5, 2});
  const torch::Tensor target = torch::tensor({0, 1, 1, 0, 1});
  auto loss = (*model)->Loss(out, target);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(
      loss->item<double>(),
      3 * torch::nn::functional::cross_entropy(out, target).item<double>(),
      1e-5);
  // Targets it cannot take fail with the module's first error line.
  auto bad = (*model)->Loss(out, torch::tensor({9, 9, 9, 9, 9}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("loss fails"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace gradsync
