// MetricsAggregator: per-rank step metrics of one job attempt and what is
// derived from them (p50/p99 step time, slowest rank, bounding phase).
// Keeps the last kWindow steps of each rank, and the job's training curve
// over every attempt (training_curve.h).
//
// Not thread-safe: the owner (Coordinator) serialises access.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "coordinator/control/training_curve.h"
#include "gradsync/v1/metrics.pb.h"

namespace gradsync {

class MetricsAggregator {
 public:
  static constexpr size_t kWindow = 1000;

  void AddStep(const v1::StepMetrics& step);
  void AddEval(const v1::EvalMetrics& eval);
  // Forgets step history (a new attempt); keeps evaluation results and the
  // curve.
  void ResetSteps();

  v1::JobMetrics Summary() const;
  // The training curve and every evaluation (job_id left empty).
  v1::JobCurves Curves() const;
  // The training curve saved from Curves() (a coordinator restart).
  void RestoreCurve(const v1::JobTrail& trail);
  // Whether any step was added since construction or ResetSteps().
  bool has_steps() const { return !ranks_.empty(); }

 private:
  struct RankHistory {
    v1::StepMetrics last;
    std::deque<v1::StepMetrics> window;
    int64_t reported = 0;
  };
  std::map<int, RankHistory> ranks_;
  std::vector<v1::EvalMetrics> eval_;
  TrainingCurve curve_;
};

// The q-quantile (0..1) of `values` by nearest rank; 0 for an empty list.
double Quantile(std::vector<double> values, double q);

}  // namespace gradsync
