// The forward contract of a scripted model: one Tensor in, [N, outputs]
// out. A conv net gives [N, 10]; a wrong input shape, a tuple result, a
// forward with two inputs and a wrong number of outputs are refused at the
// first batch, naming what was found. Files from make_model_files.py.
#include "worker/model/script_forward.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fakes/model_files.h"

namespace gradsync {
namespace {

using testing::ModelFiles;

class ScriptForwardTest : public testing::ModelFilesTest {
 protected:
  static torch::jit::Module Load(const std::string& name) {
    return torch::jit::load(ModelFiles::Get().path(name).string());
  }
  static void ExpectRefused(const absl::StatusOr<at::Tensor>& out,
                            const std::string& says) {
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << out.status();
    EXPECT_NE(out.status().message().find(says), std::string::npos)
        << out.status();
  }
};

TEST_F(ScriptForwardTest, ABatchGivesNByOutputs) {
  torch::jit::Module net = Load("good.pt");
  absl::StatusOr<at::Tensor> out =
      ScriptForward(net, torch::randn({3, 1, 8, 8}), 10);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->sizes(), (std::vector<int64_t>{3, 10}));
  ExpectRefused(ScriptForward(net, torch::randn({3, 1, 8, 8}), 7),
                "forward returned shape [3, 10] for a batch of 3; expected "
                "[3, 7]");
}

TEST_F(ScriptForwardTest, AWrongInputShapeNamesTheBatchsShape) {
  torch::jit::Module net = Load("good.pt");
  ExpectRefused(ScriptForward(net, torch::randn({3, 2, 8, 8}), 10),
                "forward fails on a batch of shape [3, 2, 8, 8]");
}

TEST_F(ScriptForwardTest, TuplesAndExtraInputsBreakTheContract) {
  torch::jit::Module tuple = Load("tuple_out.pt");
  ExpectRefused(ScriptForward(tuple, torch::randn({3, 4}), 2),
                "forward returned a Tuple[Tensor, Tensor]");
  torch::jit::Module two = Load("two_inputs.pt");
  ExpectRefused(ScriptForward(two, torch::randn({3, 4}), 2),
                "forward must take (self, Tensor x)");
}

}  // namespace
}  // namespace gradsync
