#include "coordinator/control/restart_policy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

RestartDecision DecideRestart(const FailedAttempt& a) {
  RestartDecision d;
  if (!a.error.empty() && a.error == a.previous_error) {
    d.failure = absl::StrCat(a.reason,
                             "; the previous attempt failed with the same "
                             "error, so it is not restarted again");
  } else if (absl::StartsWith(a.error, "INVALID_ARGUMENT:") ||
             absl::StartsWith(a.error, "PERMISSION_DENIED:") ||
             absl::StartsWith(a.error, "FAILED_PRECONDITION: model file:")) {
    d.failure = absl::StrCat(a.reason,
                             "; the job's own settings are refused, which a "
                             "restart would not change");
  } else if (a.restarts >= a.max_restarts) {
    d.failure = absl::StrCat(
        a.reason,
        a.max_restarts == 0
            ? "; restarts are off (max_restarts 0)"
            : absl::StrCat("; restart limit (", a.max_restarts, ") reached"));
  } else if (a.available_workers < a.min_workers && a.restart_wait_ms <= 0) {
    d.failure =
        absl::StrCat(a.reason, "; cannot restart: ", a.available_workers,
                     " worker(s) available, the job needs at least ",
                     a.min_workers, " (restart wait 0)");
  } else {
    d.waits_for_workers = a.available_workers < a.min_workers;
    d.restart = true;
  }
  return d;
}

}  // namespace gradsync
