#include "coordinator/control/gpu_placement.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(GpuPlacementTest, WorkersSeeingEveryGpuGetDistinctOnes) {
  // Three workers on a 2-GPU host, none with CUDA_VISIBLE_DEVICES: each
  // sees both GPUs, and only two can run.
  const std::vector<std::string> both = {"GPU-a", "GPU-b"};
  GpuPlacement p =
      PlaceGpus({{"h", both}, {"h", both}, {"h", both}}, TakenGpus{});
  EXPECT_EQ(p.placed, 2);
  EXPECT_EQ(p.device, (std::vector<int>{0, 1, -1}));
}

TEST(GpuPlacementTest, HostsAreIndependent) {
  const std::vector<std::string> one = {"GPU-a"};
  GpuPlacement p = PlaceGpus({{"h1", one}, {"h2", one}}, TakenGpus{});
  EXPECT_EQ(p.placed, 2);
  EXPECT_EQ(p.device, (std::vector<int>{0, 0}));
}

TEST(GpuPlacementTest, VisibleDeviceIndexIsTheWorkersOwn) {
  // CUDA_VISIBLE_DEVICES=1 makes the host's second GPU this worker's cuda:0.
  GpuPlacement p =
      PlaceGpus({{"h", {"GPU-b"}}, {"h", {"GPU-a", "GPU-b"}}}, TakenGpus{});
  EXPECT_EQ(p.device, (std::vector<int>{0, 0}));
}

TEST(GpuPlacementTest, GpusHeldByRunningRanksAreNotGivenAgain) {
  GpuPlacement p = PlaceGpus({{"h", {"GPU-a", "GPU-b"}}, {"h", {"GPU-a"}}},
                             TakenGpus{{"h", "GPU-b"}});
  EXPECT_EQ(p.device, (std::vector<int>{0, -1}));
  EXPECT_EQ(p.placed, 1);
}

TEST(GpuPlacementTest, EarlierWorkersMoveToLetLaterOnesIn) {
  // Greedy would give the first worker GPU-a and leave the second without:
  // the matching moves the first to GPU-b.
  GpuPlacement p =
      PlaceGpus({{"h", {"GPU-a", "GPU-b"}}, {"h", {"GPU-a"}}}, TakenGpus{});
  EXPECT_EQ(p.placed, 2);
  EXPECT_EQ(p.device, (std::vector<int>{1, 0}));
}

TEST(GpuPlacementTest, EarlierWorkersAreNeverDroppedForLaterOnes) {
  GpuPlacement p = PlaceGpus({{"h", {"GPU-a"}}, {"h", {"GPU-a"}}}, TakenGpus{});
  EXPECT_EQ(p.device, (std::vector<int>{0, -1}));
}

TEST(GpuPlacementTest, WorkersWithoutGpusGetNone) {
  GpuPlacement p = PlaceGpus({{"h", {}}, {"h", {"GPU-a"}}}, TakenGpus{});
  EXPECT_EQ(p.device, (std::vector<int>{-1, 0}));
}

}  // namespace
}  // namespace gradsync
