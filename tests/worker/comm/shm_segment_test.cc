// ShmSegment: joining rank 0's segment (and the reasons a rank cannot),
// and barriers that name the rank they waited for, that exited, or that
// gave up. Ranks are threads, each with its own descriptor and lock.
#include "worker/comm/shm/shm_segment.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "foundation/store/memory_store.h"
#include "tests/fakes/shm_probe.h"

namespace gradsync {
namespace {

class ShmSegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }

  ShmSegmentOptions Options(int rank, int size) const {
    ShmSegmentOptions o;
    o.rank = rank;
    o.size = size;
    o.store = store_;
    o.timeout = absl::Seconds(5);
    o.data_bytes = 4096;
    return o;
  }

  // Joins `size` ranks (rank 0 first, as the others read its key).
  std::vector<std::unique_ptr<ShmSegment>> JoinAll(int size) {
    std::vector<std::unique_ptr<ShmSegment>> all;
    for (int r = 0; r < size; ++r) {
      auto joined = ShmSegment::Join(Options(r, size));
      EXPECT_TRUE(joined.ok()) << joined.status();
      if (!joined.ok()) return {};
      all.push_back(std::move(*joined));
    }
    return all;
  }

  std::shared_ptr<Store> store_ = std::make_shared<MemoryStore>();
};

TEST_F(ShmSegmentTest, RanksSeeEachOthersWritesAcrossBarriers) {
  auto all = JoinAll(3);
  ASSERT_EQ(all.size(), 3u);
  all[0]->Unlink();
  std::vector<std::thread> threads;
  std::vector<std::string> seen(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      ShmSegment& s = *all[r];
      for (int round = 0; round < 100; ++round) {
        s.data()[r] = static_cast<char>('a' + (r + round) % 26);
        ASSERT_TRUE(s.Barrier(absl::Now() + absl::Seconds(30)).ok());
        std::string row(s.data(), 3);
        for (int p = 0; p < 3; ++p) {
          EXPECT_EQ(row[p], static_cast<char>('a' + (p + round) % 26))
              << "round " << round << ", rank " << r << " reads " << p;
        }
        ASSERT_TRUE(s.Barrier(absl::Now() + absl::Seconds(30)).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST_F(ShmSegmentTest, ABarrierNamesTheRankThatDidNotArrive) {
  auto all = JoinAll(3);
  ASSERT_EQ(all.size(), 3u);
  std::thread one([&] {
    EXPECT_FALSE(all[1]->Barrier(absl::Now() + absl::Seconds(30)).ok());
  });
  // Rank 2 never enters; rank 0's deadline passes first.
  const absl::Status s = all[0]->Barrier(absl::Now() + absl::Milliseconds(300));
  one.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("waiting for rank(s) 2"), std::string::npos) << s;
  // Rank 0 gave up, so rank 1 failed at once (not at its 30 s deadline),
  // naming it; later barriers fail with the same error.
  EXPECT_EQ(all[0]->Barrier(absl::Now() + absl::Seconds(30)), s);
}

TEST_F(ShmSegmentTest, AnExitedRankIsSeenBeforeTheDeadline) {
  auto all = JoinAll(2);
  ASSERT_EQ(all.size(), 2u);
  all[1].reset();  // closes its descriptor: its lock goes, as at exit
  const absl::Status s = all[0]->Barrier(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("rank(s) 1 exited"), std::string::npos) << s;
}

TEST_F(ShmSegmentTest, AbandoningFailsThePeersBarrier) {
  auto all = JoinAll(2);
  ASSERT_EQ(all.size(), 2u);
  all[1]->Abandon();
  const absl::Status s = all[0]->Barrier(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("rank 1 gave up"), std::string::npos) << s;
}

TEST_F(ShmSegmentTest, RankZeroRemovesTheName) {
  ASSERT_TRUE(ShmSegment::Join(Options(0, 2)).ok());  // destroyed at once
  auto published = store_->Get("shm/segment", absl::ZeroDuration());
  ASSERT_TRUE(published.ok());
  const std::string name = published->substr(0, published->find(' '));
  EXPECT_LT(shm_open(name.c_str(), O_RDWR, 0), 0);
  EXPECT_EQ(errno, ENOENT) << name;
  // So a rank that comes too late cannot join, and says which name.
  auto late = ShmSegment::Join(Options(1, 2));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(late.status().message().find(name), std::string::npos)
      << late.status();
}

TEST_F(ShmSegmentTest, JoinSaysWhyARankCannotShare) {
  ShmSegmentOptions off = Options(0, 2);
  off.enabled = false;
  EXPECT_EQ(ShmSegment::Join(off).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto one = ShmSegment::Join(Options(1, 2));
  EXPECT_EQ(one.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(one.status().message().find("rank 0 shares no memory: shared "
                                        "memory: disabled on rank 0"),
            std::string::npos)
      << one.status();

  // Another host's segment: the name exists here but holds other bytes.
  store_ = std::make_shared<MemoryStore>();
  auto zero = ShmSegment::Join(Options(0, 2));
  ASSERT_TRUE(zero.ok()) << zero.status();
  std::string key = *store_->Get("shm/segment", absl::ZeroDuration());
  const size_t nonce = key.find(' ') + 1;
  key[nonce] = key[nonce] == '1' ? '2' : '1';
  ASSERT_TRUE(store_->Set("shm/segment", key).ok());
  auto other = ShmSegment::Join(Options(1, 2));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("is not rank 0's segment"),
            std::string::npos)
      << other.status();

  ASSERT_TRUE(store_->Set("shm/segment", "/gradsync-x 12").ok());
  EXPECT_EQ(ShmSegment::Join(Options(1, 2)).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gradsync
