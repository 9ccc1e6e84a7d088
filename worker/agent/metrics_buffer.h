// MetricsBuffer: what a task has measured and not yet reported (steps,
// evaluations, checkpoint commits, log lines). The training thread adds; a
// flusher
// takes everything into one ReportMetrics request and, when the coordinator
// cannot be reached, puts it back in front (oldest first) for the next try.
// Steps are bounded: past kMaxSteps the oldest are dropped (evaluations and
// commits are few and never dropped: the ledger depends on commits); past
// kMaxLogLines the oldest log lines are dropped and counted
// (ReportMetricsRequest.logs_dropped).
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

class MetricsBuffer {
 public:
  static constexpr size_t kMaxSteps = 100000;
  static constexpr size_t kMaxLogLines = 1000;

  void Add(v1::StepMetrics step);
  void Add(v1::EvalMetrics eval);
  void Add(v1::CheckpointCommit commit);
  void Add(v1::LogLine line);

  // Moves everything buffered into `request`; false (and `request`
  // untouched) when nothing is buffered.
  bool TakeInto(v1::ReportMetricsRequest* request);
  // Puts a request's metrics back in front of what was added since.
  void PutBack(v1::ReportMetricsRequest* request);

  size_t steps() const;

 private:
  void DropOldSteps() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropOldLogs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<v1::StepMetrics> steps_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::EvalMetrics> evals_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::CheckpointCommit> checkpoints_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::LogLine> logs_ ABSL_GUARDED_BY(mu_);
  int64_t logs_dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gradsync
