// EventLog: the ordered events of one job (state changes, step and eval
// metrics) that WatchJob streams. Each event has a sequence number; watchers
// keep a cursor and block for events after it. Only the newest kCapacity
// events are kept (kClosedCapacity once the job is terminal, so finished
// jobs hold little memory); a watcher that falls further behind skips ahead.
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

 private:
  mutable absl::Mutex mu_;
  std::deque<v1::JobEvent> events_ ABSL_GUARDED_BY(mu_);
  uint64_t first_seq_ ABSL_GUARDED_BY(mu_) = 0;  // sequence of events_[0]
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gradsync
