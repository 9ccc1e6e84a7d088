#include "worker/comm/devices.h"

#include <gtest/gtest.h>

#include "gradsync/config.h"

namespace gradsync {
namespace {

TEST(DevicesTest, DiscoveryNeverFailsAndDescribesCuda) {
  DeviceReport r = DiscoverDevices();
  EXPECT_FALSE(r.cuda_status.empty());
  if (r.cuda_status != "ok") {
    EXPECT_TRUE(r.cuda.empty());
  }
  for (size_t i = 0; i < r.cuda.size(); ++i) {
    EXPECT_EQ(r.cuda[i].index, static_cast<int>(i));
    EXPECT_FALSE(r.cuda[i].name.empty());
    EXPECT_GT(r.cuda[i].memory_bytes, 0);
  }
}

TEST(DevicesTest, NcclVersionReadsWithoutAGpu) {
  DeviceReport r = DiscoverDevices();
#if GRADSYNC_WITH_NCCL
  EXPECT_GT(r.nccl_version, 20000);
  EXPECT_EQ(NcclVersionString(r.nccl_version).rfind("NCCL 2.", 0), 0u);
#else
  EXPECT_EQ(r.nccl_version, 0);
#endif
  EXPECT_EQ(NcclVersionString(22809), "NCCL 2.28.9");
  EXPECT_EQ(NcclVersionString(0), "not built with NCCL");
}

}  // namespace
}  // namespace gradsync
