// TrainingCurve: a job's training curve (loss and throughput against the
// global step) over its whole run, in bounded memory. It keeps at most
// kMaxPoints points: past that it keeps every 2nd, then every 4th, ...
// step (`stride`), so a long job's curve keeps its whole shape. A step not
// after the last point (a restart resumed from an earlier checkpoint)
// rewinds the curve to before it, so the curve shows the steps that led
// to the current model.
//
// Not thread-safe: the owner (MetricsAggregator, under the Coordinator's
// lock) serialises access.
#pragma once

#include <cstdint>
#include <vector>

#include "gradsync/v1/metrics.pb.h"

namespace gradsync {

class TrainingCurve {
 public:
  static constexpr size_t kMaxPoints = 2000;

  // Rank 0's report of a step, and the job's samples/s at that time.
  void Add(const v1::StepMetrics& step, double job_samples_per_sec);

  const std::vector<v1::CurvePoint>& points() const { return points_; }
  int64_t stride() const { return stride_; }
  // Replaces the curve with one saved from points() and stride() (a
  // coordinator restart); the newest kMaxPoints points are kept.
  void Restore(std::vector<v1::CurvePoint> points, int64_t stride);

 private:
  std::vector<v1::CurvePoint> points_;
  int64_t stride_ = 1;
};

}  // namespace gradsync
