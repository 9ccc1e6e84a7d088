#include "coordinator/control/barrier.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gradsync {
namespace {

TEST(BarrierTest, ReleasesWhenAllRanksArrive) {
  BarrierTable barriers(4);
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(4);
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      results[r] = barriers.Arrive("start", r, absl::Now() + absl::Seconds(30));
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s;
  // A released barrier stays released.
  EXPECT_TRUE(barriers.Arrive("start", 2, absl::Now()).ok());
}

TEST(BarrierTest, TimeoutNamesMissingRanks) {
  BarrierTable barriers(4);
  std::thread r1([&] {
    (void)barriers.Arrive("b", 1, absl::Now() + absl::Milliseconds(50));
  });
  absl::Status s =
      barriers.Arrive("b", 0, absl::Now() + absl::Milliseconds(50));
  r1.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  // Rank 1 may or may not have arrived before rank 0's deadline; 2 and 3
  // certainly did not.
  EXPECT_NE(s.message().find("2, 3"), std::string::npos) << s;
}

// Finding: barrier names were unbounded in number and length.
TEST(BarrierTest, NamesAreBoundedInNumberAndLength) {
  BarrierTable table(1, /*max_barriers=*/2, /*max_name_bytes=*/8);
  const absl::Time soon = absl::Now() + absl::Seconds(5);
  EXPECT_TRUE(table.Arrive("one", 0, soon).ok());
  EXPECT_TRUE(table.Arrive("two", 0, soon).ok());
  EXPECT_TRUE(table.Arrive("one", 0, soon).ok());  // known names still pass
  EXPECT_EQ(table.Arrive("three", 0, soon).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(table.Arrive("a-long-name", 0, soon).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BarrierTest, RejectsRankOutsideWorld) {
  BarrierTable barriers(2);
  EXPECT_EQ(barriers.Arrive("b", 2, absl::Now()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(barriers.Arrive("b", -1, absl::Now()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BarrierTest, CloseWakesWaiters) {
  BarrierTable barriers(2);
  std::thread closer([&] { barriers.Close(absl::AbortedError("cancelled")); });
  absl::Status s = barriers.Arrive("b", 0, absl::Now() + absl::Seconds(60));
  closer.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace gradsync
