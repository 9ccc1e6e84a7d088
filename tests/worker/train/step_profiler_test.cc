// StepProfiler records the steps of its window and no others, writes its
// table when the window ends (or the run ends inside it), and refuses a
// malformed window or an unwritable place with the reason.
#include "worker/train/step_profiler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gradsync {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The calls the table counts for `name` on the CPU; -1 without a row.
int64_t Calls(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string device, calls, us, op;
    if (std::getline(fields, device, '\t') &&
        std::getline(fields, calls, '\t') && std::getline(fields, us, '\t') &&
        std::getline(fields, op) && device == "cpu" && op == name) {
      return std::stoll(calls);
    }
  }
  return -1;
}

class StepProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradsync_step_profiler_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The window `steps`, writing to `prefix` (default: rank0 in dir_).
  ProfileWindow Window(const std::string& steps, std::string prefix = "") {
    auto w = ParseProfileSteps(steps);
    EXPECT_TRUE(w.ok()) << w.status();
    w->out_prefix = prefix.empty() ? (dir_ / "rank0").string() : prefix;
    return *w;
  }
  // One "training step": a linear layer forward and backward.
  void Step() {
    auto y = torch::mm(x_, w_).sum();
    y.backward();
  }
  // Steps 1 to `last`, each between the profiler's calls; false when one
  // of them failed.
  bool RunSteps(StepProfiler& profiler, int64_t last) {
    for (int64_t step = 1; step <= last; ++step) {
      profiler.BeforeStep(step);
      Step();
      if (!profiler.AfterStep(step).ok()) return false;
    }
    return true;
  }

  fs::path dir_;
  torch::Tensor x_ = torch::randn({8, 4});
  torch::Tensor w_ = torch::randn({4, 2}, torch::requires_grad());
};

TEST_F(StepProfilerTest, RecordsTheWindowsStepsOnly) {
  StepProfiler profiler(Window("2:4"), torch::Device(torch::kCPU));
  ASSERT_TRUE(RunSteps(profiler, 6));
  const std::string table = ReadFile(dir_ / "rank0.ops.tsv");
  EXPECT_EQ(table.rfind("# steps 2-4 (3 steps) on cpu\n", 0), 0) << table;
  // Per step: the forward product and the weight gradient's.
  EXPECT_EQ(Calls(table, "aten::mm"), 3 * 2) << table;
}

TEST_F(StepProfilerTest, ARunEndingInsideTheWindowWritesWhatItHas) {
  {
    StepProfiler profiler(Window("1:10"), torch::Device(torch::kCPU));
    ASSERT_TRUE(RunSteps(profiler, 2));
  }
  const std::string table = ReadFile(dir_ / "rank0.ops.tsv");
  EXPECT_EQ(table.rfind("# steps 1-2 (2 steps) on cpu\n", 0), 0) << table;
  EXPECT_EQ(Calls(table, "aten::mm"), 2 * 2) << table;
}

TEST_F(StepProfilerTest, SaysWhichStepEndsTheWindowOnceItRecords) {
  StepProfiler profiler(Window("2:3"), torch::Device(torch::kCPU));
  EXPECT_FALSE(profiler.EndsAt(3));  // not recording yet
  profiler.BeforeStep(1);
  EXPECT_FALSE(profiler.EndsAt(3));
  profiler.BeforeStep(2);
  EXPECT_FALSE(profiler.EndsAt(2));
  EXPECT_TRUE(profiler.EndsAt(3));
  ASSERT_TRUE(profiler.AfterStep(3).ok());
  EXPECT_FALSE(profiler.EndsAt(3));  // written and stopped
}

TEST_F(StepProfilerTest, AnUnwritablePlaceIsNamed) {
  const std::string prefix = (dir_ / "missing" / "rank0").string();
  StepProfiler profiler(Window("1", prefix), torch::Device(torch::kCPU));
  profiler.BeforeStep(1);
  Step();
  const absl::Status s = profiler.AfterStep(1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(prefix + ".ops.tsv"), std::string::npos) << s;
}

TEST(ParseProfileStepsTest, TakesAWindowOrOneStep) {
  auto w = ParseProfileSteps("3:5");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->first_step, 3);
  EXPECT_EQ(w->last_step, 5);
  EXPECT_TRUE(w->out_prefix.empty()) << w->out_prefix;  // the caller's to set
  w = ParseProfileSteps("7");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->first_step, 7);
  EXPECT_EQ(w->last_step, 7);
}

TEST(ParseProfileStepsTest, RefusesWhatIsNotAWindow) {
  for (const char* bad : {"", "0:2", "5:3", "a:b", "1:2:3", "-1", ":4"}) {
    auto w = ParseProfileSteps(bad);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(w.status().message().find(std::string("\"") + bad + "\""),
              std::string::npos)
        << w.status();
  }
}

}  // namespace
}  // namespace gradsync
