#include "coordinator/control/event_log.h"

#include <gtest/gtest.h>

#include <thread>

namespace gradsync {
namespace {

v1::JobEvent StepEvent(int64_t step) {
  v1::JobEvent e;
  e.mutable_step()->set_step(step);
  return e;
}

TEST(EventLogTest, ReadsInOrderFromCursor) {
  EventLog log;
  log.Append(StepEvent(1));
  log.Append(StepEvent(2));
  EventLog::Batch b = log.Read(0, absl::Now());
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_EQ(b.events[1].step().step(), 2);
  EXPECT_EQ(b.next_cursor, 2u);
  EXPECT_FALSE(b.closed);
  b = log.Read(2, absl::Now());
  EXPECT_TRUE(b.events.empty());
}

TEST(EventLogTest, ReadBlocksUntilAppend) {
  EventLog log;
  std::thread writer([&] { log.Append(StepEvent(7)); });
  EventLog::Batch b = log.Read(0, absl::Now() + absl::Seconds(30));
  writer.join();
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].step().step(), 7);
}

TEST(EventLogTest, CloseEndsReaders) {
  EventLog log;
  log.Append(StepEvent(1));
  log.Close();
  log.Append(StepEvent(2));  // ignored after close
  EventLog::Batch b = log.Read(0, absl::Now() + absl::Seconds(30));
  EXPECT_EQ(b.events.size(), 1u);
  EXPECT_TRUE(b.closed);
}

TEST(EventLogTest, SlowReaderSkipsToOldestKept) {
  EventLog log;
  for (size_t i = 0; i < EventLog::kCapacity + 10; ++i)
    log.Append(StepEvent(i));
  EventLog::Batch b = log.Read(0, absl::Now());
  ASSERT_EQ(b.events.size(), EventLog::kCapacity);
  EXPECT_EQ(b.events[0].step().step(), 10);
}

TEST(EventLogTest, CloseKeepsOnlyTheTail) {
  EventLog log;
  for (int i = 0; i < 1000; ++i) log.Append(StepEvent(i));
  log.Close();
  EXPECT_EQ(log.EndCursor(), 1000u);
  EventLog::Batch b = log.Read(0, absl::Now());
  ASSERT_EQ(b.events.size(), EventLog::kClosedCapacity);
  EXPECT_EQ(b.events.front().step().step(), 1000 - 256);
  EXPECT_EQ(b.events.back().step().step(), 999);
  EXPECT_EQ(b.next_cursor, 1000u);
  EXPECT_TRUE(b.closed);
}

// Large events are kept within kMaxBytes (kClosedMaxBytes once closed),
// oldest dropped first; the newest stays whatever its size.
TEST(EventLogTest, KeepsEventsWithinItsByteLimit) {
  EventLog log;
  v1::JobEvent big;
  big.mutable_job()->set_message(std::string(1 << 20, 'm'));
  for (int i = 0; i < 40; ++i) {
    big.mutable_job()->set_attempt(i);
    log.Append(big);
  }
  EXPECT_LE(log.bytes(), EventLog::kMaxBytes);
  EXPECT_EQ(log.EndCursor(), 40u);
  EventLog::Batch b = log.Read(0, absl::Now());
  ASSERT_FALSE(b.events.empty());
  EXPECT_LT(b.events.size(), 17u);
  EXPECT_EQ(b.events.back().job().attempt(), 39);
  log.Close();
  EXPECT_LE(log.bytes(), EventLog::kClosedMaxBytes + (1u << 20) + 64);
  b = log.Read(0, absl::Now());
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_EQ(b.events[0].job().attempt(), 39);
}

}  // namespace
}  // namespace gradsync
