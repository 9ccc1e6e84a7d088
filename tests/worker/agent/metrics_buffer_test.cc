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

namespace gradsync {
namespace {

v1::LogLine Line(int i) {
  v1::LogLine l;
  l.set_text(std::to_string(i));
  return l;
}

TEST(MetricsBufferLogTest, LinesAreBoundedAndTheDroppedCounted) {
  MetricsBuffer buffer;
  const int extra = 5;
  for (int i = 0; i < static_cast<int>(MetricsBuffer::kMaxLogLines) + extra;
       ++i) {
    buffer.Add(Line(i));
  }
  v1::ReportMetricsRequest request;
  ASSERT_TRUE(buffer.TakeInto(&request));
  ASSERT_EQ(request.logs_size(), static_cast<int>(MetricsBuffer::kMaxLogLines));
  EXPECT_EQ(request.logs(0).text(), std::to_string(extra));  // oldest gone
  EXPECT_EQ(request.logs_dropped(), extra);

  // A failed report goes back in front, its dropped count with it.
  buffer.Add(Line(-1));
  buffer.PutBack(&request);
  v1::ReportMetricsRequest again;
  ASSERT_TRUE(buffer.TakeInto(&again));
  EXPECT_EQ(again.logs_dropped(), extra + 1);  // bounded again: 1 more
  EXPECT_EQ(again.logs(again.logs_size() - 1).text(), "-1");
  EXPECT_FALSE(buffer.TakeInto(&again));
}

TEST(MetricsBufferLogTest, ADroppedCountAloneIsReported) {
  MetricsBuffer buffer;
  v1::ReportMetricsRequest request;
  request.set_logs_dropped(3);
  buffer.PutBack(&request);
  v1::ReportMetricsRequest out;
  ASSERT_TRUE(buffer.TakeInto(&out));
  EXPECT_EQ(out.logs_dropped(), 3);
}

}  // namespace
}  // namespace gradsync
