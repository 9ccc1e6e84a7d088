#include "worker/train/step_deadline.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {

void EndProcessAfterOverrun(const absl::Status& overrun) {
  const std::string line = absl::StrCat(
      overrun.ToString(), "; ending the process (exit code ",
      kStepOverrunExitCode, ") so that its supervisor starts a fresh one\n");
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  std::_Exit(kStepOverrunExitCode);
}

StepDeadline::StepDeadline(absl::Duration limit, OnOverrun on_overrun)
    : limit_(limit),
      on_overrun_(on_overrun ? std::move(on_overrun)
                             : OnOverrun(&EndProcessAfterOverrun)) {
  if (limit_ > absl::ZeroDuration()) {
    thread_ = std::thread([this] { WatchLoop(); });
  }
}

StepDeadline::~StepDeadline() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

StepDeadline::Scope StepDeadline::Watch(std::string what) {
  if (!thread_.joinable()) return Scope(nullptr);
  absl::MutexLock lock(&mu_);
  armed_ = true;
  ++generation_;
  deadline_ = absl::Now() + limit_;
  what_ = std::move(what);
  return Scope(this);
}

StepDeadline::Scope::~Scope() {
  if (owner_ != nullptr) owner_->Disarm();
}

void StepDeadline::Disarm() {
  absl::MutexLock lock(&mu_);
  armed_ = false;
}

bool StepDeadline::StopOrArmed() const { return stop_ || armed_; }

bool StepDeadline::WatchedEnded() const {
  return stop_ || !armed_ || generation_ != watched_;
}

void StepDeadline::WatchLoop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    if (!armed_) {
      mu_.Await(absl::Condition(this, &StepDeadline::StopOrArmed));
      continue;
    }
    // Wait for this Watch() to end, or for its deadline.
    watched_ = generation_;
    mu_.AwaitWithDeadline(absl::Condition(this, &StepDeadline::WatchedEnded),
                          deadline_);
    if (WatchedEnded()) continue;
    // Still the same work, past its deadline: reported once.
    const absl::Status overrun = absl::DeadlineExceededError(absl::StrCat(
        "step deadline: ", what_, " ran longer than ",
        absl::FormatDuration(limit_),
        " (the job's step_timeout_ms); a model that loops or stalls holds "
        "its worker"));
    armed_ = false;
    mu_.Unlock();
    on_overrun_(overrun);
    mu_.Lock();
  }
}

}  // namespace gradsync
