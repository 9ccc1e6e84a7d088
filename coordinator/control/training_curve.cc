#include "coordinator/control/training_curve.h"

#include <algorithm>

namespace gradsync {

void TrainingCurve::Add(const v1::StepMetrics& step,
                        double job_samples_per_sec) {
  // Rewind: a restart trains again from an earlier step.
  while (!points_.empty() && points_.back().step() >= step.step()) {
    points_.pop_back();
  }
  if (step.step() % stride_ != 0) return;
  v1::CurvePoint& p = points_.emplace_back();
  p.set_step(step.step());
  p.set_epoch(step.epoch());
  p.set_loss(step.loss());
  p.set_samples_per_sec(job_samples_per_sec);
  p.set_time_unix_ms(step.time_unix_ms());
  while (points_.size() > kMaxPoints) {
    stride_ *= 2;
    points_.erase(std::remove_if(points_.begin(), points_.end(),
                                 [this](const v1::CurvePoint& q) {
                                   return q.step() % stride_ != 0;
                                 }),
                  points_.end());
  }
}

void TrainingCurve::Restore(std::vector<v1::CurvePoint> points,
                            int64_t stride) {
  if (points.size() > kMaxPoints) {
    points.erase(points.begin(), points.end() - kMaxPoints);
  }
  points_ = std::move(points);
  stride_ = std::max<int64_t>(stride, 1);
}

}  // namespace gradsync
