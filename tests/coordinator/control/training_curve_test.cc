#include "coordinator/control/training_curve.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

v1::StepMetrics Step(int64_t step, double loss = 1.0) {
  v1::StepMetrics s;
  s.set_step(step);
  s.set_epoch(static_cast<int>(step / 100));
  s.set_loss(loss);
  s.set_time_unix_ms(1000 + step);
  return s;
}

TEST(TrainingCurveTest, KeepsEveryStepWhileItFits) {
  TrainingCurve curve;
  curve.Add(Step(1, 2.5), 300);
  curve.Add(Step(2, 2.0), 310);
  ASSERT_EQ(curve.points().size(), 2u);
  EXPECT_EQ(curve.stride(), 1);
  EXPECT_EQ(curve.points()[1].step(), 2);
  EXPECT_EQ(curve.points()[1].loss(), 2.0);
  EXPECT_EQ(curve.points()[1].samples_per_sec(), 310);
  EXPECT_EQ(curve.points()[1].time_unix_ms(), 1002);
}

TEST(TrainingCurveTest, ThinsToBoundedPointsOverTheWholeRun) {
  TrainingCurve curve;
  const int64_t steps = 10 * TrainingCurve::kMaxPoints + 7;
  for (int64_t s = 1; s <= steps; ++s) curve.Add(Step(s), 1);
  ASSERT_LE(curve.points().size(), TrainingCurve::kMaxPoints);
  EXPECT_GE(curve.points().size(), TrainingCurve::kMaxPoints / 2);
  EXPECT_EQ(curve.stride(), 16);
  // Evenly spaced from the start to the end of the run.
  EXPECT_EQ(curve.points().front().step(), 16);
  EXPECT_GT(curve.points().back().step(), steps - curve.stride());
  for (size_t i = 1; i < curve.points().size(); ++i) {
    EXPECT_EQ(curve.points()[i].step() - curve.points()[i - 1].step(), 16);
  }
}

TEST(TrainingCurveTest, ARestartFromAnEarlierStepRewinds) {
  TrainingCurve curve;
  for (int64_t s = 1; s <= 30; ++s) curve.Add(Step(s, 1.0), 1);
  // The new attempt resumes from the checkpoint of step 20.
  curve.Add(Step(21, 0.5), 1);
  ASSERT_EQ(curve.points().size(), 21u);
  EXPECT_EQ(curve.points().back().step(), 21);
  EXPECT_EQ(curve.points().back().loss(), 0.5);
  EXPECT_EQ(curve.points()[19].loss(), 1.0);
}

TEST(TrainingCurveTest, ARestoredCurveGoesOnWhereItWas) {
  TrainingCurve curve;
  for (int64_t s = 1; s <= 3; ++s) curve.Add(Step(s), 100);
  TrainingCurve restored;
  restored.Restore(curve.points(), curve.stride());
  restored.Add(Step(4), 100);
  ASSERT_EQ(restored.points().size(), 4u);
  EXPECT_EQ(restored.points()[0].step(), 1);
  EXPECT_EQ(restored.points()[3].step(), 4);
}

}  // namespace
}  // namespace gradsync
