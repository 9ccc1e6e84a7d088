// CallWatchdog: cancels a gRPC client call at a deadline, for the waits
// gRPC's synchronous API cannot bound by itself (a Read or Write on a
// long-lived stream, whose context deadline is the whole stream's). One
// thread serves the process; it wakes at least once a second, so arming a
// deadline seconds away costs no wake-up.
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class CallWatchdog {
 public:
  // The process's watchdog (its thread starts on first use, never ends).
  static CallWatchdog& Shared();

  // From now until Disarm(id), `context` is cancelled (TryCancel) once
  // `deadline` passes. `context` must outlive the Disarm.
  uint64_t Arm(grpc::ClientContext* context, absl::Time deadline);
  // Stops watching; true when the deadline had passed and the call was
  // cancelled.
  bool Disarm(uint64_t id);

 private:
  CallWatchdog();
  void Run();

  absl::Mutex mu_;
  absl::CondVar cv_;  // Run's sleep, cut short by an earlier deadline
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // When Run next looks.
  absl::Time wake_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::set<std::pair<absl::Time, uint64_t>> by_deadline_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::pair<absl::Time, grpc::ClientContext*>> armed_
      ABSL_GUARDED_BY(mu_);
  // Cancelled, not yet disarmed.
  std::set<uint64_t> fired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
