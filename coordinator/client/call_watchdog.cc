#include "coordinator/client/call_watchdog.h"

#include <thread>

#include "absl/time/clock.h"

namespace gradsync {
namespace {

constexpr absl::Duration kMaxSleep = absl::Seconds(1);

}  // namespace

CallWatchdog& CallWatchdog::Shared() {
  static CallWatchdog* const watchdog = new CallWatchdog;
  return *watchdog;
}

CallWatchdog::CallWatchdog() {
  std::thread([this] { Run(); }).detach();
}

uint64_t CallWatchdog::Arm(grpc::ClientContext* context, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  armed_.emplace(id, std::make_pair(deadline, context));
  by_deadline_.emplace(deadline, id);
  if (deadline < wake_) cv_.Signal();
  return id;
}

bool CallWatchdog::Disarm(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (fired_.erase(id) > 0) return true;
  auto it = armed_.find(id);
  if (it != armed_.end()) {
    by_deadline_.erase({it->second.first, id});
    armed_.erase(it);
  }
  return false;
}

void CallWatchdog::Run() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    const absl::Time now = absl::Now();
    while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
      const uint64_t id = by_deadline_.begin()->second;
      by_deadline_.erase(by_deadline_.begin());
      auto it = armed_.find(id);
      it->second.second->TryCancel();  // does not block
      armed_.erase(it);
      fired_.insert(id);
    }
    wake_ = now + kMaxSleep;
    if (!by_deadline_.empty()) {
      wake_ = std::min(wake_, by_deadline_.begin()->first);
    }
    cv_.WaitWithDeadline(&mu_, wake_);
  }
}

}  // namespace gradsync
