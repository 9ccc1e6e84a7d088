// MetricsBuffer: what a task has measured and not yet reported (steps,
// evaluations, checkpoint commits). The training thread adds; a flusher
// takes everything into one ReportMetrics request and, when the coordinator
// cannot be reached, puts it back in front (oldest first) for the next try.
// Steps are bounded: past kMaxSteps the oldest are dropped (evaluations and
// commits are few and never dropped: the ledger depends on commits).
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

class MetricsBuffer {
 public:
  static constexpr size_t kMaxSteps = 100000;

  void Add(v1::StepMetrics step);
  void Add(v1::EvalMetrics eval);
  void Add(v1::CheckpointCommit commit);

  // Moves everything buffered into `request`; false (and `request`
  // untouched) when nothing is buffered.
  bool TakeInto(v1::ReportMetricsRequest* request);
  // Puts a request's metrics back in front of what was added since.
  void PutBack(v1::ReportMetricsRequest* request);

  size_t steps() const;

 private:
  void DropOldSteps() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<v1::StepMetrics> steps_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::EvalMetrics> evals_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::CheckpointCommit> checkpoints_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
