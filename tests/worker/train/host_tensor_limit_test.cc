// LimitHostTensorMemory: CPU tensors are counted while they live; one that
// would cross the limit is refused with LibTorch's error naming the sizes,
// which StatusFromException reports as RESOURCE_EXHAUSTED; no limit, no
// refusal.
#include "worker/train/host_tensor_limit.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "loader/exception_status.h"

namespace gradsync {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

class HostTensorLimitTest : public ::testing::Test {
 protected:
  void TearDown() override { LimitHostTensorMemory(0); }
};

TEST_F(HostTensorLimitTest, LiveTensorsAreCountedUntilFreed) {
  LimitHostTensorMemory(0);
  const int64_t before = HostTensorBytesInUse();
  {
    torch::Tensor t = torch::ones({8 * kMiB / 4});  // 8 MiB of floats
    EXPECT_GE(HostTensorBytesInUse() - before, 8 * kMiB);
    EXPECT_LT(HostTensorBytesInUse() - before, 9 * kMiB);
  }
  EXPECT_EQ(HostTensorBytesInUse(), before);
}

TEST_F(HostTensorLimitTest, AnAllocationPastTheLimitIsRefusedNamingIt) {
  LimitHostTensorMemory(64 * kMiB);
  const int64_t before = HostTensorBytesInUse();
  torch::Tensor held = torch::zeros({32 * kMiB / 4});  // 32 MiB fits
  try {
    torch::Tensor more = torch::zeros({48 * kMiB / 4});
    FAIL() << "48 MiB more was allowed past a 64 MiB limit";
  } catch (const c10::Error& e) {
    const absl::Status s = StatusFromException(e, "training");
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_NE(s.message().find("training: out of memory: a CPU tensor of "
                               "48.0 MiB would take this worker's tensors to"),
              std::string::npos)
        << s;
    EXPECT_NE(s.message().find("over its memory limit of 64.0 MiB"),
              std::string::npos)
        << s;
  }
  // The refusal took nothing; what is held is still counted.
  EXPECT_GE(HostTensorBytesInUse() - before, 32 * kMiB);
  EXPECT_LT(HostTensorBytesInUse() - before, 33 * kMiB);
  held = torch::Tensor();
  EXPECT_EQ(HostTensorBytesInUse(), before);
}

TEST_F(HostTensorLimitTest, WithoutALimitNothingIsRefused) {
  LimitHostTensorMemory(0);
  torch::Tensor big = torch::zeros({96 * kMiB / 4});
  EXPECT_EQ(big.numel(), 96 * kMiB / 4);
}

TEST(DefaultHostTensorLimitTest, IsAShareOfThisHostsMemory) {
  const int64_t one = DefaultHostTensorLimit(1);
  EXPECT_GT(one, 0);
  EXPECT_NEAR(static_cast<double>(DefaultHostTensorLimit(4)), one / 4.0, 1.0);
}

}  // namespace
}  // namespace gradsync
