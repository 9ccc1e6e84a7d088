#include "worker/agent/metrics_buffer.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

v1::StepMetrics Step(int64_t step) {
  v1::StepMetrics m;
  m.set_step(step);
  return m;
}

TEST(MetricsBufferTest, TakeMovesEverythingAndLeavesItEmpty) {
  MetricsBuffer buffer;
  v1::ReportMetricsRequest request;
  EXPECT_FALSE(buffer.TakeInto(&request));
  buffer.Add(Step(1));
  buffer.Add(Step(2));
  v1::EvalMetrics eval;
  eval.set_epoch(0);
  buffer.Add(eval);
  v1::CheckpointCommit commit;
  commit.set_step(2);
  buffer.Add(commit);
  ASSERT_TRUE(buffer.TakeInto(&request));
  ASSERT_EQ(request.steps_size(), 2);
  EXPECT_EQ(request.steps(0).step(), 1);
  EXPECT_EQ(request.eval_size(), 1);
  EXPECT_EQ(request.checkpoints(0).step(), 2);
  v1::ReportMetricsRequest again;
  EXPECT_FALSE(buffer.TakeInto(&again));
}

TEST(MetricsBufferTest, PutBackKeepsTheOldestFirst) {
  MetricsBuffer buffer;
  buffer.Add(Step(1));
  buffer.Add(Step(2));
  v1::ReportMetricsRequest failed;
  ASSERT_TRUE(buffer.TakeInto(&failed));
  buffer.Add(Step(3));  // measured while the report was on its way
  buffer.PutBack(&failed);
  EXPECT_EQ(failed.steps_size(), 0);
  v1::ReportMetricsRequest retry;
  ASSERT_TRUE(buffer.TakeInto(&retry));
  ASSERT_EQ(retry.steps_size(), 3);
  EXPECT_EQ(retry.steps(0).step(), 1);
  EXPECT_EQ(retry.steps(1).step(), 2);
  EXPECT_EQ(retry.steps(2).step(), 3);
}

TEST(MetricsBufferTest, StepsAreBoundedDroppingTheOldest) {
  MetricsBuffer buffer;
  const int64_t n = MetricsBuffer::kMaxSteps + 10;
  for (int64_t i = 1; i <= n; ++i) buffer.Add(Step(i));
  EXPECT_EQ(buffer.steps(), MetricsBuffer::kMaxSteps);
  v1::ReportMetricsRequest request;
  ASSERT_TRUE(buffer.TakeInto(&request));
  EXPECT_EQ(request.steps(0).step(), 11);
  EXPECT_EQ(request.steps(request.steps_size() - 1).step(), n);
  // A put-back request is bounded the same way.
  buffer.Add(Step(n + 1));
  buffer.PutBack(&request);
  EXPECT_EQ(buffer.steps(), MetricsBuffer::kMaxSteps);
}

}  // namespace
}  // namespace gradsync
