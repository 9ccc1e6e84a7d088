#include "coordinator/server/call_gate.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<CallGate::Pass> CallGate::Enter(absl::string_view what) {
  if (waiting_.fetch_add(1) >= max_) {
    waiting_.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": ", max_,
        " calls are already waiting on this coordinator (store waits, "
        "barriers, watches), the most it serves at once "
        "(--max-waiting-calls); try again later"));
  }
  return Pass(this);
}

}  // namespace gradsync
