// EventLog: the ordered events of one job (state changes, step and eval
// metrics) that WatchJob streams. Each event has a sequence number; watchers
// keep a cursor and block for events after it. Only the newest kCapacity
// events within kMaxBytes are kept (kClosedCapacity and kClosedMaxBytes once
// the job is terminal, so finished jobs hold little memory); a watcher that
// falls further behind skips ahead.
//
// Thread-safe. After Close() (terminal job) waiters return what is left and
// then an empty batch with closed=true.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/job_service.pb.h"

namespace gradsync {

class EventLog {
 public:
  static constexpr size_t kCapacity = 20000;
  static constexpr size_t kClosedCapacity = 256;
  static constexpr size_t kMaxBytes = 16 << 20;
  static constexpr size_t kClosedMaxBytes = 1 << 20;

  struct Batch {
    std::vector<v1::JobEvent> events;
    uint64_t next_cursor = 0;  // pass to the next Read()
    bool closed = false;       // no event will follow `events`
  };

  void Append(v1::JobEvent event);
  void Close();
  // Events with sequence >= cursor; waits until there is one, the log is
  // closed, or `deadline` passes (then an empty, not-closed batch).
  Batch Read(uint64_t cursor, absl::Time deadline);
  uint64_t EndCursor() const;
  size_t bytes() const;  // what the kept events hold (serialized)

 private:
  // Drops the oldest events beyond `capacity` or `max_bytes` (the newest
  // one always stays).
  void Trim(size_t capacity, size_t max_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<v1::JobEvent> events_ ABSL_GUARDED_BY(mu_);
  std::deque<size_t> sizes_ ABSL_GUARDED_BY(mu_);  // of events_, in bytes
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t first_seq_ ABSL_GUARDED_BY(mu_) = 0;  // sequence of events_[0]
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gradsync
