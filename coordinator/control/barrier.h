// BarrierTable: named barriers of one job attempt with a fixed world size.
// A barrier releases when every rank 0..W-1 has arrived; arrivals are
// idempotent and a released barrier stays released, so a retried call of a
// rank that already passed returns at once.
//
// Thread-safe. Arrive() blocks until release, its deadline (DEADLINE_EXCEEDED
// naming the ranks that have not arrived) or Close().
#pragma once

#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class BarrierTable {
 public:
  // At most `max_barriers` names, each at most `max_name_bytes` long
  // (RESOURCE_EXHAUSTED / INVALID_ARGUMENT past them).
  explicit BarrierTable(int world_size, size_t max_barriers = 4096,
                        size_t max_name_bytes = 256)
      : world_size_(world_size),
        max_barriers_(max_barriers),
        max_name_bytes_(max_name_bytes) {}
  BarrierTable(const BarrierTable&) = delete;
  BarrierTable& operator=(const BarrierTable&) = delete;

  // INVALID_ARGUMENT for a rank outside [0, world_size).
  absl::Status Arrive(const std::string& name, int rank, absl::Time deadline);

  // Fails every waiting and future Arrive() with `status` (must not be OK).
  void Close(absl::Status status);

 private:
  const int world_size_;
  const size_t max_barriers_;
  const size_t max_name_bytes_;
  absl::Mutex mu_;
  std::map<std::string, std::set<int>> arrived_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
