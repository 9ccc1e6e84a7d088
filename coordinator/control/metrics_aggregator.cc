#include "coordinator/control/metrics_aggregator.h"

#include <algorithm>
#include <cmath>

namespace gradsync {

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  // Nearest-rank definition: the smallest value with at least q of the
  // values at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
  if (rank > 0) --rank;
  rank = std::min(rank, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

void MetricsAggregator::AddStep(const v1::StepMetrics& step) {
  RankHistory& h = ranks_[step.rank()];
  h.last = step;
  h.window.push_back(step);
  if (h.window.size() > kWindow) h.window.pop_front();
  ++h.reported;
  if (step.rank() == 0) {
    double samples_per_sec = 0;
    for (const auto& [rank, other] : ranks_) {
      samples_per_sec += other.last.samples_per_sec();
    }
    curve_.Add(step, samples_per_sec);
  }
}

v1::JobCurves MetricsAggregator::Curves() const {
  v1::JobCurves out;
  out.mutable_train()->Assign(curve_.points().begin(), curve_.points().end());
  out.set_stride(curve_.stride());
  out.mutable_eval()->Assign(eval_.begin(), eval_.end());
  return out;
}

void MetricsAggregator::AddEval(const v1::EvalMetrics& eval) {
  eval_.push_back(eval);
}

void MetricsAggregator::ResetSteps() { ranks_.clear(); }

v1::JobMetrics MetricsAggregator::Summary() const {
  v1::JobMetrics out;
  out.set_slowest_rank(-1);
  double slowest_p50 = -1;
  const v1::RankMetrics* slowest = nullptr;
  for (const auto& [rank, h] : ranks_) {
    v1::RankMetrics* r = out.add_ranks();
    r->set_rank(rank);
    *r->mutable_last() = h.last;
    r->set_steps_reported(h.reported);
    std::vector<double> step_ms;
    step_ms.reserve(h.window.size());
    double data = 0, compute = 0, allreduce = 0;
    double forward = 0, backward = 0, optimizer = 0;
    for (const v1::StepMetrics& s : h.window) {
      step_ms.push_back(s.step_ms());
      data += s.data_wait_ms();
      compute += s.compute_ms();
      allreduce += s.allreduce_ms();
      forward += s.forward_ms();
      backward += s.backward_ms();
      optimizer += s.optimizer_ms();
    }
    const double n = std::max<size_t>(h.window.size(), 1);
    r->set_mean_data_wait_ms(data / n);
    r->set_mean_compute_ms(compute / n);
    r->set_mean_allreduce_ms(allreduce / n);
    r->set_mean_forward_ms(forward / n);
    r->set_mean_backward_ms(backward / n);
    r->set_mean_optimizer_ms(optimizer / n);
    r->set_p50_step_ms(Quantile(step_ms, 0.5));
    r->set_p99_step_ms(Quantile(step_ms, 0.99));
    out.set_samples_per_sec(out.samples_per_sec() + h.last.samples_per_sec());
    if (r->p50_step_ms() > slowest_p50) {
      slowest_p50 = r->p50_step_ms();
      slowest = r;
    }
  }
  if (slowest != nullptr) {
    out.set_slowest_rank(slowest->rank());
    v1::Phase phase = v1::PHASE_DATA;
    double most = slowest->mean_data_wait_ms();
    if (slowest->mean_compute_ms() > most) {
      phase = v1::PHASE_COMPUTE;
      most = slowest->mean_compute_ms();
    }
    if (slowest->mean_allreduce_ms() > most) phase = v1::PHASE_ALLREDUCE;
    out.set_bounding_phase(phase);
  }
  for (const v1::EvalMetrics& e : eval_) *out.add_eval() = e;
  return out;
}

void MetricsAggregator::RestoreCurve(const v1::JobTrail& trail) {
  curve_.Restore({trail.train().begin(), trail.train().end()}, trail.stride());
}

}  // namespace gradsync
