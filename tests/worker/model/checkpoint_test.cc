// Checkpoint fields beyond the model and optimizer: the loss scaler of a
// 16-mixed run survives a write and a restore, and runs without one write
// none. The file names no code to run on load (weights_only loading).
#include "worker/model/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "worker/model/builtin_model.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test: ctest runs the tests as parallel processes.
    const std::string test =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ =
        (fs::path(::testing::TempDir()) / ("gradsync_checkpoint_test_" + test +
                                           "_" + std::to_string(::getpid())))
            .string();
    fs::remove_all(dir_);
    ModelShape shape;
    shape.channels = 1;
    shape.height = shape.width = 12;
    shape.classes = 3;
    model_ = *MakeModel("lenet", shape);
    trainable_ = std::make_unique<BuiltinModel>(model_);
    optimizer_ = std::make_unique<torch::optim::SGD>(
        model_->parameters(), torch::optim::SGDOptions(0.1));
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainPosition RoundTrip(const TrainPosition& at) {
    auto path = WriteCheckpoint(*trainable_, *optimizer_, at, {}, dir_);
    EXPECT_TRUE(path.ok()) << path.status();
    auto bytes = ReadFileBytes(*path);
    EXPECT_TRUE(bytes.ok());
    auto back = RestoreCheckpoint(*bytes, *path, *trainable_, *optimizer_);
    EXPECT_TRUE(back.ok()) << back.status();
    return *back;
  }

  std::string dir_;
  std::shared_ptr<ImageClassifier> model_;
  std::unique_ptr<BuiltinModel> trainable_;  // model_, as the trainer holds it
  std::unique_ptr<torch::optim::SGD> optimizer_;
};

TEST_F(CheckpointTest, LossScalerStateSurvives) {
  TrainPosition at;
  at.step = 7;
  ScalerState scaler;
  scaler.scale = 2048;
  scaler.growth_tracker = 123;
  scaler.growth_interval = 500;
  at.scaler = scaler;
  const TrainPosition back = RoundTrip(at);
  EXPECT_EQ(back.step, 7);
  ASSERT_TRUE(back.scaler.has_value());
  EXPECT_EQ(back.scaler->scale, 2048);
  EXPECT_EQ(back.scaler->growth_tracker, 123);
  EXPECT_EQ(back.scaler->growth_interval, 500);
  EXPECT_EQ(back.scaler->growth_factor, 2.0);
  EXPECT_EQ(back.scaler->backoff_factor, 0.5);
}

// Finding: snapshots named torch.jit._pickle.restore_type_tag and
// build_intlist, so torch.load(..., weights_only=True) refused them. The
// pickle (stored, not compressed, in the zip) may name only containers and
// tensor rebuilders; the whole momentum state is in it.
TEST_F(CheckpointTest, TheFileNamesNoTorchScriptHelpers) {
  optimizer_ = std::make_unique<torch::optim::SGD>(
      model_->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  model_->forward(torch::rand({2, 1, 12, 12})).sum().backward();
  optimizer_->step();
  TrainPosition at;
  at.step = 1;
  auto path = WriteCheckpoint(*trainable_, *optimizer_, at, {{"k", "v"}}, dir_);
  ASSERT_TRUE(path.ok()) << path.status();
  auto bytes = ReadFileBytes(*path);
  ASSERT_TRUE(bytes.ok());
  const std::string text(bytes->begin(), bytes->end());
  EXPECT_EQ(text.find("torch.jit"), std::string::npos);
  EXPECT_EQ(text.find("restore_type_tag"), std::string::npos);
  EXPECT_EQ(text.find("build_intlist"), std::string::npos);
  EXPECT_NE(text.find("_rebuild_tensor_v2"), std::string::npos);
  EXPECT_TRUE(RestoreCheckpoint(*bytes, *path, *trainable_, *optimizer_).ok());
}

// A job that trains a model file resumes only from that file's checkpoint:
// another digest (or none) is refused before any weight is touched.
TEST_F(CheckpointTest, MetadataThatMustMatchIsCheckedBeforeLoading) {
  auto path = WriteCheckpoint(*trainable_, *optimizer_, TrainPosition{},
                              {{"model_file_sha256", "aaa"}}, dir_);
  ASSERT_TRUE(path.ok()) << path.status();
  auto bytes = ReadFileBytes(*path);
  ASSERT_TRUE(bytes.ok());
  const torch::Tensor before = model_->parameters()[0].clone();
  {
    torch::NoGradGuard no_grad;
    model_->parameters()[0].add_(1);
  }
  for (const char* other : {"bbb", ""}) {
    auto refused = RestoreCheckpoint(*bytes, *path, *trainable_, *optimizer_,
                                     {{"model_file_sha256", other}});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("its model_file_sha256 is 'aaa'"),
              std::string::npos)
        << refused.status();
  }
  EXPECT_TRUE(torch::equal(model_->parameters()[0], before + 1));
  EXPECT_TRUE(RestoreCheckpoint(*bytes, *path, *trainable_, *optimizer_,
                                {{"model_file_sha256", "aaa"}})
                  .ok());
  EXPECT_TRUE(torch::equal(model_->parameters()[0], before));
}

// Finding: two jobs sharing a directory overwrote each other, resuming from
// it took another job's latest, the temporary file was opened through
// links, and resume_from was read whole whatever its size.
TEST_F(CheckpointTest, JobsKeepApartAndFilesAreWrittenSafely) {
  TrainPosition at;
  at.step = 3;
  auto a = WriteCheckpoint(*trainable_, *optimizer_, at, {}, dir_, "job-a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, dir_ + "/model-job-a-step-3.pt");
  auto latest = ResolveCheckpoint(dir_);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, *a);

  // A link planted where the temporary file goes is replaced, not followed.
  const std::string victim = dir_ + "-victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, dir_ + "/model-job-b-step-5.pt.tmp");
  at.step = 5;
  auto b = WriteCheckpoint(*trainable_, *optimizer_, at, {}, dir_, "job-b");
  ASSERT_TRUE(b.ok()) << b.status();
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  fs::remove(victim);

  auto ambiguous = ResolveCheckpoint(dir_);
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(ambiguous.status().message().find("several jobs (job-a, job-b)"),
            std::string::npos)
      << ambiguous.status();

  EXPECT_EQ(ReadFileBytes(*b, 100).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadFileBytes(dir_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ReadFileBytes(*b).ok());
}

TEST_F(CheckpointTest, NoScalerWithoutLossScaling) {
  TrainPosition at;
  at.step = 3;
  EXPECT_FALSE(RoundTrip(at).scaler.has_value());
}

}  // namespace
}  // namespace gradsync
