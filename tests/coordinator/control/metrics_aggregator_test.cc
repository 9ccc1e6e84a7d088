#include "coordinator/control/metrics_aggregator.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

v1::StepMetrics Step(int rank, double step_ms, double data, double compute,
                     double allreduce) {
  v1::StepMetrics s;
  s.set_rank(rank);
  s.set_step_ms(step_ms);
  s.set_data_wait_ms(data);
  s.set_compute_ms(compute);
  s.set_allreduce_ms(allreduce);
  s.set_samples_per_sec(100);
  return s;
}

TEST(QuantileTest, NearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(Quantile(v, 0.5), 50);
  EXPECT_EQ(Quantile(v, 0.99), 99);
  EXPECT_EQ(Quantile(v, 1.0), 100);
  EXPECT_EQ(Quantile({}, 0.5), 0);
  EXPECT_EQ(Quantile({7}, 0.99), 7);
}

TEST(MetricsAggregatorTest, SlowestRankAndBoundingPhase) {
  MetricsAggregator m;
  for (int i = 0; i < 10; ++i) {
    m.AddStep(Step(0, 10, 1, 8, 1));
    m.AddStep(Step(1, 30, 25, 4, 1));  // rank 1 waits for data
  }
  v1::JobMetrics s = m.Summary();
  ASSERT_EQ(s.ranks_size(), 2);
  EXPECT_EQ(s.slowest_rank(), 1);
  EXPECT_EQ(s.bounding_phase(), v1::PHASE_DATA);
  EXPECT_DOUBLE_EQ(s.ranks(1).p50_step_ms(), 30);
  EXPECT_DOUBLE_EQ(s.samples_per_sec(), 200);
  EXPECT_EQ(s.ranks(0).steps_reported(), 10);
}

TEST(MetricsAggregatorTest, CurveFollowsRankZeroOverAttempts) {
  MetricsAggregator m;
  for (int step = 1; step <= 3; ++step) {
    v1::StepMetrics r1 = Step(1, 10, 1, 8, 1);
    r1.set_step(step);
    m.AddStep(r1);
    v1::StepMetrics r0 = Step(0, 10, 1, 8, 1);
    r0.set_step(step);
    r0.set_loss(1.0 / step);
    m.AddStep(r0);
  }
  v1::EvalMetrics eval;
  eval.set_accuracy(0.5);
  m.AddEval(eval);
  m.ResetSteps();  // a new attempt keeps the curve
  v1::JobCurves c = m.Curves();
  ASSERT_EQ(c.train_size(), 3);  // rank 0's steps only
  EXPECT_EQ(c.train(2).step(), 3);
  EXPECT_DOUBLE_EQ(c.train(2).loss(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(c.train(2).samples_per_sec(), 200);  // both ranks
  EXPECT_EQ(c.stride(), 1);
  ASSERT_EQ(c.eval_size(), 1);
  EXPECT_DOUBLE_EQ(c.eval(0).accuracy(), 0.5);
}

TEST(MetricsAggregatorTest, ComputeIsAveragedInItsParts) {
  MetricsAggregator m;
  v1::StepMetrics a = Step(0, 10, 0, 9, 1);
  a.set_forward_ms(2);
  a.set_backward_ms(6);
  a.set_optimizer_ms(1);
  v1::StepMetrics b = Step(0, 14, 0, 13, 1);
  b.set_forward_ms(4);
  b.set_backward_ms(8);
  b.set_optimizer_ms(1);
  m.AddStep(a);
  m.AddStep(b);
  const v1::RankMetrics r = m.Summary().ranks(0);
  EXPECT_DOUBLE_EQ(r.mean_compute_ms(), 11);
  EXPECT_DOUBLE_EQ(r.mean_forward_ms(), 3);
  EXPECT_DOUBLE_EQ(r.mean_backward_ms(), 7);
  EXPECT_DOUBLE_EQ(r.mean_optimizer_ms(), 1);
}

TEST(MetricsAggregatorTest, AllreduceBound) {
  MetricsAggregator m;
  m.AddStep(Step(0, 10, 1, 3, 6));
  EXPECT_EQ(m.Summary().bounding_phase(), v1::PHASE_ALLREDUCE);
}

TEST(MetricsAggregatorTest, WindowIsBounded) {
  MetricsAggregator m;
  for (size_t i = 0; i < MetricsAggregator::kWindow; ++i) {
    m.AddStep(Step(0, 1000, 0, 1, 0));
  }
  for (size_t i = 0; i < MetricsAggregator::kWindow; ++i) {
    m.AddStep(Step(0, 1, 0, 1, 0));
  }
  EXPECT_DOUBLE_EQ(m.Summary().ranks(0).p99_step_ms(), 1);
}

TEST(MetricsAggregatorTest, EmptyHasNoSlowestRank) {
  MetricsAggregator m;
  EXPECT_EQ(m.Summary().slowest_rank(), -1);
}

}  // namespace
}  // namespace gradsync
