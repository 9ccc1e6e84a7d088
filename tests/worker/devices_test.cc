#include "worker/devices.h"

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
  for (const auto& d : r.cuda) {
    EXPECT_EQ(d.kind(), "cuda");
    EXPECT_GT(d.memory_bytes(), 0);
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
