#include "coordinator/control/event_log.h"

#include <algorithm>
#include <utility>

namespace gradsync {

void EventLog::Append(v1::JobEvent event) {
  const size_t size = event.ByteSizeLong();
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  events_.push_back(std::move(event));
  sizes_.push_back(size);
  bytes_ += size;
  Trim(kCapacity, kMaxBytes);
}

void EventLog::Trim(size_t capacity, size_t max_bytes) {
  while (events_.size() > 1 &&
         (events_.size() > capacity || bytes_ > max_bytes)) {
    events_.pop_front();
    bytes_ -= sizes_.front();
    sizes_.pop_front();
    ++first_seq_;
  }
}

void EventLog::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  // A finished job's watchers need only the tail (a new watcher starts
  // from the job's record anyway).
  Trim(kClosedCapacity, kClosedMaxBytes);
  events_.shrink_to_fit();
  sizes_.shrink_to_fit();
}

size_t EventLog::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

uint64_t EventLog::EndCursor() const {
  absl::MutexLock lock(&mu_);
  return first_seq_ + events_.size();
}

EventLog::Batch EventLog::Read(uint64_t cursor, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, cursor]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return closed_ || first_seq_ + events_.size() > cursor;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  Batch batch;
  const uint64_t end = first_seq_ + events_.size();
  const uint64_t begin = std::max(cursor, first_seq_);
  for (uint64_t seq = begin; seq < end; ++seq) {
    batch.events.push_back(events_[seq - first_seq_]);
  }
  batch.next_cursor = std::max(cursor, end);
  batch.closed = closed_;
  return batch;
}

}  // namespace gradsync
