// What the allowlist of script_module_check.h cannot bound, bounded while
// the model runs: a forward that runs past the step timeout is reported
// (step_deadline.h) naming the probe or the step, and a forward that would
// take the worker's tensors past its memory limit (host_tensor_limit.h)
// fails the training with RESOURCE_EXHAUSTED, not the process. Model files
// from make_model_files.py, trained on the synthetic "tiny" preset.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/fakes/model_files.h"
#include "tests/fakes/rank_threads.h"
#include "worker/train/host_tensor_limit.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using testing::ModelFiles;
using testing::ModelFilesTest;

class ModelLimitsTest : public ModelFilesTest {
 protected:
  // One rank trains `model_file` for one step (every sample in one batch).
  absl::StatusOr<TrainResult> Run(const std::string& model_file,
                                  absl::Duration step_timeout) {
    auto comm = SoloCommunicator();
    if (!comm.ok()) return comm.status();
    TrainContext c;
    c.spec.dataset_path = "synthetic:tiny";
    c.spec.model_file = ModelFiles::Get().path(model_file).string();
    c.spec.model = model_file;
    c.spec.batch_size = 512;
    c.spec.step_timeout = step_timeout;
    c.train_samples = 512;
    c.comm = comm->get();
    c.checksum_every = 0;
    c.shard = [](int, bool) {
      std::vector<int64_t> all(512);
      for (int64_t i = 0; i < 512; ++i) all[i] = i;
      return absl::StatusOr<std::vector<int64_t>>(all);
    };
    c.on_step_overrun = [this](const absl::Status& overrun) {
      absl::MutexLock lock(&mu_);
      overruns_.push_back(overrun);
    };
    return Train(c);
  }

  std::vector<absl::Status> Overruns() {
    absl::MutexLock lock(&mu_);
    return overruns_;
  }

  absl::Mutex mu_;
  std::vector<absl::Status> overruns_ ABSL_GUARDED_BY(mu_);
};

// spins.pt loops 20000 times in forward: far past a 5 ms limit. The
// watchdog reports each watched piece of work once; it does not stop it
// (the handler here returns), so training still ends.
TEST_F(ModelLimitsTest, AModelPastTheStepTimeoutIsReportedNamingTheStep) {
  auto result = Run("spins.pt", absl::Milliseconds(5));
  ASSERT_TRUE(result.ok()) << result.status();
  const std::vector<absl::Status> overruns = Overruns();
  ASSERT_EQ(overruns.size(), 2u);
  for (const absl::Status& s : overruns) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_NE(s.message().find("ran longer than 5ms (the job's "
                               "step_timeout_ms)"),
              std::string::npos)
        << s;
  }
  EXPECT_NE(overruns[0].message().find("rank 0's channels-last probe"),
            std::string::npos)
      << overruns[0];
  EXPECT_NE(overruns[1].message().find(
                "rank 0's step 1 (forward, loss and backward)"),
            std::string::npos)
      << overruns[1];
}

TEST_F(ModelLimitsTest, WithinTheStepTimeoutNothingIsReported) {
  auto result = Run("spins.pt", absl::Minutes(10));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(Overruns().empty());
}

// hungry.pt holds 1 GiB in each forward; the limit is 256 MiB.
TEST_F(ModelLimitsTest, AModelPastTheMemoryLimitFailsTheTrainingNotTheProcess) {
  LimitHostTensorMemory(int64_t{256} << 20);
  auto result = Run("hungry.pt", absl::Minutes(10));
  LimitHostTensorMemory(0);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted)
      << result.status();
  EXPECT_NE(result.status().message().find("model file: forward fails"),
            std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find(
                "over its memory limit of 256.0 MiB (--memory-limit-mb)"),
            std::string::npos)
      << result.status();
  // The same process trains a model that fits.
  auto fits = Run("spins.pt", absl::Minutes(10));
  EXPECT_TRUE(fits.ok()) << fits.status();
}

}  // namespace
}  // namespace gradsync
