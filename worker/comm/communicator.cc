#include "worker/comm/communicator.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync {

absl::Status Communicator::TimeoutError(const std::string& op, int64_t seq,
                                        const std::string& cause) {
  const std::string mine = absl::StrCat("arrived/", seq, "/");
  (void)store_->Set(absl::StrCat(mine, rank_), "1");
  // Other live ranks time out at about the same moment; give them a grace
  // to mark their arrival before naming the ones that did not.
  const absl::Duration grace =
      std::clamp(timeout_ / 4, absl::Seconds(1), absl::Seconds(10));
  const absl::Time deadline = absl::Now() + grace;
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    if (!store_->Get(absl::StrCat(mine, r), left).ok()) missing.push_back(r);
  }
  const bool timed_out = absl::StrContains(cause, "imed out") ||
                         absl::StrContains(cause, "imeout");
  std::string who = missing.empty()
                        ? "every rank reached it"
                        : absl::StrCat("rank(s) ", absl::StrJoin(missing, ", "),
                                       " did not arrive");
  const std::string message = absl::StrFormat(
      "%s #%d (%s, rank %d of %d) %s after %s: %s (%s)", op, seq, backend(),
      rank_, size_, timed_out ? "timed out" : "failed",
      absl::FormatDuration(timeout_), who, cause);
  return timed_out ? absl::DeadlineExceededError(message)
                   : absl::UnavailableError(message);
}

}  // namespace gradsync
