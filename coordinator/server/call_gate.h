// Bounds the calls that hold a server thread while they wait (store gets
// and waits, barriers, job watches). gRPC's synchronous server runs each
// call on a thread of its own; without a bound, enough waiting calls leave
// no thread for heartbeats, and workers are declared dead. A call past the
// bound fails at once with RESOURCE_EXHAUSTED.
// Thread-safe.
#pragma once

#include <atomic>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

class CallGate {
 public:
  explicit CallGate(int max_waiting) : max_(max_waiting) {}
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // Held for the length of one waiting call; move-only.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (gate_ != nullptr) gate_->waiting_.fetch_sub(1);
    }

   private:
    friend class CallGate;
    explicit Pass(CallGate* gate) : gate_(gate) {}
    CallGate* gate_;
  };

  // A pass, or RESOURCE_EXHAUSTED naming `what` and the bound.
  absl::StatusOr<Pass> Enter(absl::string_view what);
  int waiting() const { return waiting_.load(); }

 private:
  const int max_;
  std::atomic<int> waiting_{0};
};

}  // namespace gradsync
