// 16-mixed's loss scaling (torch.amp.GradScaler semantics): unscaling, the
// overflow decision agreed by every rank, back-off and growth.
// cuda_grad_scaler_test (GRADSYNC_TEST_NCCL, label gpu) runs the agreement
// case with gradients on cuda:r over NCCL; it skips, saying why, without
// the GPUs.
#include "worker/train/grad_scaler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "tests/fakes/rank_threads.h"

namespace gradsync {
namespace {

// A parameter whose gradient is `grad`.
torch::Tensor WithGrad(torch::Tensor grad) {
  torch::Tensor p = torch::zeros_like(grad).requires_grad_(true);
  p.mutable_grad() = grad;
  return p;
}

// An overflow on one rank only: every rank skips, and gradients are
// divided by the scale on every rank.
TEST(GradScalerTest, AnOverflowOnOneRankSkipsTheStepOnEveryRank) {
  const int world = 2;
  if (const std::string why = CannotRunRanks(kBackend, world); !why.empty()) {
    GTEST_SKIP() << why;
  }
  for (int bad_rank : {-1, 0, 1}) {
    SCOPED_TRACE("overflow on rank " + std::to_string(bad_rank));
    RunRanks(kBackend, world, absl::Seconds(60), [&](int r, Communicator& c) {
      GradScaler scaler;  // scale 65536
      torch::Tensor g =
          torch::full({4}, 65536.0f * 3).to(RankDevice(kBackend, r));
      if (r == bad_rank) {
        g[2] = std::numeric_limits<float>::infinity();
      }
      torch::Tensor p = WithGrad(g);
      torch::Tensor q =
          WithGrad(torch::full({2}, 65536.0f).to(RankDevice(kBackend, r)));
      auto found = scaler.UnscaleAndCheck({p, q}, c);
      ASSERT_TRUE(found.ok()) << found.status();
      EXPECT_EQ(*found, bad_rank >= 0) << "rank " << r;
      EXPECT_FLOAT_EQ(q.grad()[0].item<float>(), 1.0f);
      EXPECT_FLOAT_EQ(p.grad()[0].item<float>(), 3.0f);
    });
  }
}

#ifndef GRADSYNC_TEST_NCCL  // the rest does not depend on the backend

TEST(GradScalerTest, NanCountsAsAnOverflow) {
  auto comm = SoloCommunicator();
  ASSERT_TRUE(comm.ok());
  GradScaler scaler;
  torch::Tensor p = WithGrad(torch::tensor({1.0f, NAN}));
  auto found = scaler.UnscaleAndCheck({p}, **comm);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(*found);
}

TEST(GradScalerTest, ScaleBacksOffOnOverflowAndGrowsAfterTheInterval) {
  ScalerState s;
  s.scale = 1024;
  s.growth_interval = 3;
  GradScaler scaler(s);
  EXPECT_FLOAT_EQ(scaler.Scale(torch::tensor(2.0f)).item<float>(), 2048.0f);
  scaler.Update(/*found_inf=*/true);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  scaler.Update(false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.state().growth_tracker, 2);
  scaler.Update(false);  // the third clean step in a row
  EXPECT_EQ(scaler.scale(), 1024);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  scaler.Update(false);
  scaler.Update(true);  // an overflow resets the count
  scaler.Update(false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 512);
}

TEST(GradScalerTest, TheScaleStaysAFiniteFloat) {
  ScalerState s;
  s.scale = 3e38;  // doubling would overflow float32
  s.growth_interval = 1;
  GradScaler scaler(s);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 3e38);
}

#endif  // GRADSYNC_TEST_NCCL

}  // namespace
}  // namespace gradsync
