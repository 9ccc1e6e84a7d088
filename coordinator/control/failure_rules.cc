#include "coordinator/control/failure_rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/control/coordinator_internal.h"

namespace gradsync {

Silence JudgeSilence(absl::Duration silent, absl::Duration heartbeat_timeout,
                     bool already_dead) {
  if (already_dead) {
    return silent > 20 * heartbeat_timeout + absl::Minutes(1) ? Silence::kForget
                                                              : Silence::kDead;
  }
  return silent <= heartbeat_timeout ? Silence::kAlive : Silence::kDead;
}

Stall FindStall(const std::vector<RankProgress>& ranks,
                absl::Duration patience) {
  int64_t front = 0;
  for (const RankProgress& r : ranks) {
    front = std::max(front, r.collective_seq);
  }
  std::vector<std::string> waiting, behind;
  absl::Duration waited = absl::ZeroDuration();
  for (const RankProgress& r : ranks) {
    if (r.at_seq_for < patience) continue;
    if (r.collective_seq == front) {
      waiting.push_back(absl::StrCat(r.rank));
      waited = std::max(waited, r.at_seq_for);
    } else {
      behind.push_back(absl::StrCat("rank ", r.rank, " (worker ", r.worker_id,
                                    " on host ", r.host, ", at #",
                                    r.collective_seq, ", step ", r.step, ")"));
    }
  }
  Stall stall;
  if (waiting.empty() || behind.empty()) return stall;
  stall.key =
      absl::StrCat(absl::StrJoin(behind, ", "), " has not reached collective #",
                   front, " that rank(s) ", absl::StrJoin(waiting, ", "));
  stall.text = absl::StrCat(stall.key, " have waited in for ",
                            coordinator_internal::FormatSeconds(waited));
  return stall;
}

}  // namespace gradsync
