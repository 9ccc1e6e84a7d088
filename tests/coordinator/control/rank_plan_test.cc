// PlanRanks: which idle workers become which ranks and GPUs, with no
// Coordinator (its scheduler applies the plan; rendezvous_test and the
// gpu tests of server_test cover that end to end).
#include "coordinator/control/rank_plan.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

using Ints = std::vector<int>;

TEST(RankPlanTest, TakesUpToMaxWorkersInOrderGroupedByHost) {
  // Registration order a@h2, b@h1, c@h2, d@h1, e@h3; max 4 leaves e out.
  const std::vector<IdleWorker> idle = {
      {"h2", {}}, {"h1", {}}, {"h2", {}}, {"h1", {}}, {"h3", {}}};
  RankPlan p = PlanRanks(idle, 2, 4, v1::BACKEND_AUTO, {});
  ASSERT_TRUE(p.start);
  EXPECT_FALSE(p.nccl);                      // auto without GPUs: gloo
  EXPECT_EQ(p.workers, (Ints{1, 3, 0, 2}));  // h1's, then h2's, stable
  EXPECT_EQ(p.local_rank, (Ints{0, 1, 0, 1}));
  EXPECT_EQ(p.cuda_device, (Ints{-1, -1, -1, -1}));
}

TEST(RankPlanTest, TooFewWorkersWaitsQuietly) {
  RankPlan p = PlanRanks({{"h", {}}}, 2, 2, v1::BACKEND_GLOO, {});
  EXPECT_FALSE(p.start);
  EXPECT_TRUE(p.wait_message.empty());
  EXPECT_TRUE(p.workers.empty());
}

TEST(RankPlanTest, AutoRunsNcclOnlyWhenEveryRankGetsAGpu) {
  const std::vector<std::string> one = {"GPU-a"};
  // Two workers on a one-GPU host: the second gets no GPU, so gloo.
  RankPlan shared =
      PlanRanks({{"h", one}, {"h", one}}, 2, 2, v1::BACKEND_AUTO, {});
  ASSERT_TRUE(shared.start);
  EXPECT_FALSE(shared.nccl);
  EXPECT_EQ(shared.cuda_device, (Ints{-1, -1}));
  // One each on two hosts: nccl, each on its host's GPU.
  RankPlan own =
      PlanRanks({{"h1", one}, {"h2", one}}, 2, 2, v1::BACKEND_AUTO, {});
  ASSERT_TRUE(own.start);
  EXPECT_TRUE(own.nccl);
  EXPECT_EQ(own.cuda_device, (Ints{0, 0}));
}

TEST(RankPlanTest, NcclTakesOnlyWorkersWithAFreeGpuAndSaysWhyItWaits) {
  const std::vector<std::string> both = {"GPU-a", "GPU-b"};
  const std::vector<IdleWorker> idle = {{"h", both}, {"h", {}}, {"h", both}};
  // GPU-a is held by a running rank: one free GPU for two workers that see
  // it, and the middle worker has none.
  const TakenGpus taken = {{"h", "GPU-a"}};
  RankPlan wait = PlanRanks(idle, 2, 2, v1::BACKEND_NCCL, taken);
  EXPECT_FALSE(wait.start);
  EXPECT_NE(wait.wait_message.find("2 of 3 idle worker(s) have a GPU, 1 of "
                                   "them a free one"),
            std::string::npos)
      << wait.wait_message;
  RankPlan one = PlanRanks(idle, 1, 2, v1::BACKEND_NCCL, taken);
  ASSERT_TRUE(one.start);
  EXPECT_TRUE(one.nccl);
  EXPECT_EQ(one.workers, (Ints{0}));
  EXPECT_EQ(one.cuda_device, (Ints{1}));  // its GPU-b
}

TEST(RankPlanTest, GlooIgnoresGpus) {
  const std::vector<std::string> one = {"GPU-a"};
  RankPlan p =
      PlanRanks({{"h1", one}, {"h2", one}}, 2, 2, v1::BACKEND_GLOO, {});
  ASSERT_TRUE(p.start);
  EXPECT_FALSE(p.nccl);
  EXPECT_EQ(p.cuda_device, (Ints{-1, -1}));
}

}  // namespace
}  // namespace gradsync
