// The failure detector's rules without a Coordinator: when a silent worker
// is dead (and forgotten), and when a running job is stalled and on whom.
#include "coordinator/control/failure_rules.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(FailureRulesTest, SilenceIsDeathPastTheTimeoutAndForgottenLater) {
  const absl::Duration timeout = absl::Seconds(10);
  EXPECT_EQ(JudgeSilence(absl::Seconds(10), timeout, false), Silence::kAlive);
  EXPECT_EQ(JudgeSilence(absl::Seconds(11), timeout, false), Silence::kDead);
  // Dead workers stay listed for 20 timeouts plus a minute.
  EXPECT_EQ(JudgeSilence(absl::Seconds(260), timeout, true), Silence::kDead);
  EXPECT_EQ(JudgeSilence(absl::Seconds(261), timeout, true), Silence::kForget);
  // A dead worker that spoke again is still dead (it re-registers).
  EXPECT_EQ(JudgeSilence(absl::ZeroDuration(), timeout, true), Silence::kDead);
}

RankProgress Rank(int rank, int64_t seq, absl::Duration at_seq_for) {
  return {rank, "w" + std::to_string(rank), "h", seq, 3, at_seq_for};
}

TEST(FailureRulesTest, AStallNamesTheRankBehindAndTheRanksWaiting) {
  const absl::Duration patience = absl::Seconds(3);
  Stall s =
      FindStall({Rank(0, 8, absl::Seconds(12)), Rank(1, 8, absl::Seconds(5)),
                 Rank(2, 7, absl::Seconds(20))},
                patience);
  EXPECT_EQ(s.text,
            "rank 2 (worker w2 on host h, at #7, step 3) has not reached "
            "collective #8 that rank(s) 0, 1 have waited in for 12.0 s");
  EXPECT_EQ(s.key,
            "rank 2 (worker w2 on host h, at #7, step 3) has not reached "
            "collective #8 that rank(s) 0, 1");
  // The key does not move with the time waited: the same stall.
  Stall later =
      FindStall({Rank(0, 8, absl::Seconds(30)), Rank(1, 8, absl::Seconds(23)),
                 Rank(2, 7, absl::Seconds(38))},
                patience);
  EXPECT_EQ(later.key, s.key);
  EXPECT_NE(later.text, s.text);
}

TEST(FailureRulesTest, NoStallWhileRanksMoveOrAllWait) {
  const absl::Duration patience = absl::Seconds(3);
  // The rank behind moved a moment ago: it is catching up.
  EXPECT_TRUE(
      FindStall({Rank(0, 8, absl::Seconds(12)), Rank(1, 7, absl::Seconds(1))},
                patience)
          .text.empty());
  // Every rank waits in the same collective: a slow collective, no one
  // behind (the collective's own deadline names who is missing).
  EXPECT_TRUE(
      FindStall({Rank(0, 8, absl::Seconds(12)), Rank(1, 8, absl::Seconds(12))},
                patience)
          .key.empty());
  EXPECT_TRUE(FindStall({}, patience).text.empty());
}

}  // namespace
}  // namespace gradsync
