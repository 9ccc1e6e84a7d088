// StepDeadline: a watchdog over the model's own work (a step's forward,
// loss and backward, the channels-last probe, each evaluation batch). The
// checks a model file passes (script_module_check.h) cannot tell whether
// its forward ends: a `while` loop that never exits, or one that runs for
// hours, would hold its worker for good, and no thread can be stopped
// inside LibTorch. So when one watched piece of work runs past the job's
// step timeout, the watchdog calls `on_overrun` with DEADLINE_EXCEEDED
// naming the work, the limit and the field that sets it; the caller decides
// what the process does (EndProcessAfterOverrun: exit, so that the worker's
// supervisor starts a fresh one, as torchrun's agents restart a worker
// whose collective timed out). Collectives are not watched here: they have
// their own deadline (Communicator).
//
// Thread safety: Watch() and the Scope it returns are for one thread (the
// training thread); `on_overrun` runs on the watchdog's own thread, at most
// once per Scope, while that Scope's work is still running.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

// The exit code of a process ended by EndProcessAfterOverrun (EX_SOFTWARE).
inline constexpr int kStepOverrunExitCode = 70;

// Writes `overrun` to stderr and ends the process at once (std::_Exit:
// the thread stuck in the model is not joined, and nothing waits for it).
[[noreturn]] void EndProcessAfterOverrun(const absl::Status& overrun);

class StepDeadline {
 public:
  using OnOverrun = std::function<void(const absl::Status& overrun)>;

  // `limit` <= 0: nothing is watched (no thread). `on_overrun` null:
  // EndProcessAfterOverrun.
  StepDeadline(absl::Duration limit, OnOverrun on_overrun);
  ~StepDeadline();
  StepDeadline(const StepDeadline&) = delete;
  StepDeadline& operator=(const StepDeadline&) = delete;

  // Watches the work from now until the Scope ends. `what` names it in
  // the overrun ("step 12's forward, loss and backward").
  class Scope {
   public:
    Scope(Scope&& other) noexcept : owner_(other.owner_) {
      other.owner_ = nullptr;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class StepDeadline;
    explicit Scope(StepDeadline* owner) : owner_(owner) {}
    StepDeadline* owner_;  // null: nothing to end
  };
  [[nodiscard]] Scope Watch(std::string what);

  absl::Duration limit() const { return limit_; }

 private:
  void Disarm();
  void WatchLoop();
  bool StopOrArmed() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool WatchedEnded() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const absl::Duration limit_;
  const OnOverrun on_overrun_;
  absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // one per Watch()
  uint64_t watched_ ABSL_GUARDED_BY(mu_) = 0;     // the watcher's
  absl::Time deadline_ ABSL_GUARDED_BY(mu_);
  std::string what_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // only with a limit
};

}  // namespace gradsync
