#include "coordinator/control/port_allocator.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(PortAllocatorTest, TwoJobsOnOneHostGetDifferentPorts) {
  PortAllocator ports(29500, 29501);
  EXPECT_EQ(*ports.Acquire("a", {}), 29500);
  EXPECT_EQ(*ports.Acquire("a", {}), 29501);
  EXPECT_EQ(*ports.Acquire("b", {}), 29500);  // another host
  EXPECT_EQ(ports.Acquire("a", {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  ports.Release("a", 29500);
  EXPECT_EQ(*ports.Acquire("a", {}), 29500);
}

TEST(PortAllocatorTest, PrefersTheWorkersOfferedPorts) {
  PortAllocator ports(29500, 29999);
  EXPECT_EQ(*ports.Acquire("a", {41002, 41001}), 41001);
  EXPECT_EQ(*ports.Acquire("a", {41002, 41001}), 41002);
  EXPECT_FALSE(ports.Acquire("a", {41002, 41001}).ok());
  EXPECT_EQ(ports.InUse("a"), 2u);
}

}  // namespace
}  // namespace gradsync
