#include "worker/agent/metrics_buffer.h"

#include <iterator>
#include <utility>

namespace gradsync {
namespace {

template <typename From, typename To>
void MoveToFront(From* from, To& to) {
  to.insert(to.begin(), std::make_move_iterator(from->begin()),
            std::make_move_iterator(from->end()));
  from->Clear();
}

template <typename From, typename To>
void MoveAll(From& from, To* to) {
  for (auto& item : from) *to->Add() = std::move(item);
  from.clear();
}

}  // namespace

void MetricsBuffer::Add(v1::StepMetrics step) {
  absl::MutexLock lock(&mu_);
  steps_.push_back(std::move(step));
  DropOldSteps();
}

void MetricsBuffer::Add(v1::EvalMetrics eval) {
  absl::MutexLock lock(&mu_);
  evals_.push_back(std::move(eval));
}

void MetricsBuffer::Add(v1::CheckpointCommit commit) {
  absl::MutexLock lock(&mu_);
  checkpoints_.push_back(std::move(commit));
}

void MetricsBuffer::Add(v1::LogLine line) {
  absl::MutexLock lock(&mu_);
  logs_.push_back(std::move(line));
  DropOldLogs();
}

bool MetricsBuffer::TakeInto(v1::ReportMetricsRequest* request) {
  absl::MutexLock lock(&mu_);
  if (steps_.empty() && evals_.empty() && checkpoints_.empty() &&
      logs_.empty() && logs_dropped_ == 0) {
    return false;
  }
  MoveAll(steps_, request->mutable_steps());
  MoveAll(evals_, request->mutable_eval());
  MoveAll(checkpoints_, request->mutable_checkpoints());
  MoveAll(logs_, request->mutable_logs());
  request->set_logs_dropped(logs_dropped_);
  logs_dropped_ = 0;
  return true;
}

void MetricsBuffer::PutBack(v1::ReportMetricsRequest* request) {
  absl::MutexLock lock(&mu_);
  MoveToFront(request->mutable_steps(), steps_);
  MoveToFront(request->mutable_eval(), evals_);
  MoveToFront(request->mutable_checkpoints(), checkpoints_);
  MoveToFront(request->mutable_logs(), logs_);
  logs_dropped_ += request->logs_dropped();
  request->set_logs_dropped(0);
  DropOldSteps();
  DropOldLogs();
}

size_t MetricsBuffer::steps() const {
  absl::MutexLock lock(&mu_);
  return steps_.size();
}

void MetricsBuffer::DropOldSteps() {
  if (steps_.size() > kMaxSteps) {
    steps_.erase(steps_.begin(), steps_.end() - kMaxSteps);
  }
}

void MetricsBuffer::DropOldLogs() {
  if (logs_.size() > kMaxLogLines) {
    const size_t drop = logs_.size() - kMaxLogLines;
    logs_.erase(logs_.begin(), logs_.begin() + drop);
    logs_dropped_ += static_cast<int64_t>(drop);
  }
}

}  // namespace gradsync
