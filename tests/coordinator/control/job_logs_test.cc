#include "coordinator/control/job_logs.h"

#include <gtest/gtest.h>

#include <string>

#include "gradsync/v1/job_service.pb.h"

namespace gradsync {
namespace {

v1::LogLine Line(const std::string& text) {
  v1::LogLine l;
  l.set_text(text);
  l.set_time_unix_ms(7);
  return l;
}

TEST(JobLogsTest, LinesInArrivalOrderByRankAndAfterASeq) {
  JobLogs logs;
  logs.Append(0, 1, Line("a0"));
  logs.Append(1, 1, Line("b0"));
  logs.Append(0, 2, Line("a1"));
  JobLogs::Page all = logs.Read(std::nullopt, 0, 0);
  ASSERT_EQ(all.lines.size(), 3u);
  EXPECT_EQ(all.lines[0].text(), "a0");
  EXPECT_EQ(all.lines[1].text(), "b0");
  EXPECT_EQ(all.lines[2].seq(), 3);
  EXPECT_EQ(all.lines[2].attempt(), 2);
  EXPECT_EQ(all.lines[2].time_unix_ms(), 7);
  EXPECT_EQ(all.next_seq, 3);

  JobLogs::Page rank0 = logs.Read(0, 0, 0);
  ASSERT_EQ(rank0.lines.size(), 2u);
  EXPECT_EQ(rank0.lines[1].text(), "a1");
  // A follower: only what came after.
  logs.Append(1, 2, Line("b1"));
  JobLogs::Page next = logs.Read(std::nullopt, all.next_seq, 0);
  ASSERT_EQ(next.lines.size(), 1u);
  EXPECT_EQ(next.lines[0].text(), "b1");
  EXPECT_EQ(next.next_seq, 4);
  // Nothing new: the same next_seq.
  EXPECT_EQ(logs.Read(std::nullopt, 4, 0).next_seq, 4);
  // The newest N.
  JobLogs::Page tail = logs.Read(std::nullopt, 0, 2);
  ASSERT_EQ(tail.lines.size(), 2u);
  EXPECT_EQ(tail.lines[0].text(), "a1");
}

TEST(JobLogsTest, EachRankKeepsItsNewestLinesAndCountsTheRest) {
  JobLogs logs;
  logs.Append(1, 1, Line("quiet rank"));
  for (size_t i = 0; i < JobLogs::kMaxLinesPerRank + 10; ++i) {
    logs.Append(0, 1, Line("line " + std::to_string(i)));
  }
  logs.CountDropped(0, 5);  // the worker dropped some itself
  JobLogs::Page rank0 = logs.Read(0, 0, 0);
  ASSERT_EQ(rank0.lines.size(), JobLogs::kMaxLinesPerRank);
  EXPECT_EQ(rank0.lines[0].text(), "line 10");
  EXPECT_EQ(rank0.dropped, 15);
  // A chatty rank does not push out a quiet one.
  JobLogs::Page rank1 = logs.Read(1, 0, 0);
  ASSERT_EQ(rank1.lines.size(), 1u);
  EXPECT_EQ(rank1.dropped, 0);
  EXPECT_EQ(logs.Read(std::nullopt, 0, 0).dropped, 15);
}

TEST(JobLogsTest, TheJobKeepsItsNewestLinesOverAllRanks) {
  JobLogs logs;
  const int ranks = 20;
  const size_t per_rank = JobLogs::kMaxLines / ranks + 100;
  for (size_t i = 0; i < per_rank; ++i) {
    for (int r = 0; r < ranks; ++r) logs.Append(r, 1, Line(std::to_string(i)));
  }
  JobLogs::Page all = logs.Read(std::nullopt, 0, 0);
  ASSERT_EQ(all.lines.size(), JobLogs::kMaxLines);
  EXPECT_EQ(all.dropped,
            static_cast<int64_t>(per_rank * ranks - JobLogs::kMaxLines));
  // The oldest went: every rank's first 100 lines.
  EXPECT_EQ(all.lines.front().text(), "100");
  EXPECT_EQ(all.lines.front().rank(), 0);
}

TEST(JobLogsTest, LongLinesAreCut) {
  JobLogs logs;
  logs.Append(0, 1, Line(std::string(JobLogs::kMaxLineBytes + 50, 'x')));
  EXPECT_EQ(logs.Read(0, 0, 0).lines[0].text().size(), JobLogs::kMaxLineBytes);
}

// What a coordinator restart keeps: the newest lines, counts of the rest,
// and the numbering, which goes on where it was.
TEST(JobLogsTest, SavedAndLoadedTheNewestLinesAndCountsRemain) {
  JobLogs logs;
  for (int i = 0; i < 5; ++i)
    logs.Append(i % 2, 1, Line("l" + std::to_string(i)));
  logs.CountDropped(1, 3);
  v1::JobTrail trail;
  logs.SaveTo(3, &trail);
  ASSERT_EQ(trail.logs_size(), 3);
  EXPECT_EQ(trail.logs(0).text(), "l2");
  EXPECT_EQ(trail.next_log_seq(), 6);
  JobLogs restored;
  restored.LoadFrom(trail);
  JobLogs::Page page = restored.Read(std::nullopt, 0, 0);
  ASSERT_EQ(page.lines.size(), 3u);
  EXPECT_EQ(page.lines[2].text(), "l4");
  // Rank 0 wrote l0, l2, l4 (l0 left out); rank 1 l1, l3 (l1 left out) and
  // dropped 3 itself.
  EXPECT_EQ(page.dropped, 5);
  EXPECT_EQ(restored.Read(0, 0, 0).dropped, 1);
  restored.Append(0, 2, Line("after"));
  EXPECT_EQ(restored.Read(std::nullopt, 5, 0).lines.at(0).seq(), 6);
}

// Finding (issue 39): a line of 4095 bytes and an "é" was cut inside the
// "é", and every later read of the job's log failed (protobuf refuses
// invalid UTF-8). Lines are cut at a character boundary.
TEST(JobLogsTest, LongLinesAreCutBetweenCharacters) {
  JobLogs logs;
  logs.Append(
      0, 1,
      Line(std::string(JobLogs::kMaxLineBytes - 1, 'a') + "\xc3\xa9 and more"));
  logs.Append(0, 1,
              Line(std::string(JobLogs::kMaxLineBytes - 2, 'a') +
                   "\xe2\x82\xac"));  // a 3-byte euro sign
  JobLogs::Page page = logs.Read(0, 0, 0);
  ASSERT_EQ(page.lines.size(), 2u);
  EXPECT_EQ(page.lines[0].text(), std::string(JobLogs::kMaxLineBytes - 1, 'a'));
  EXPECT_EQ(page.lines[1].text(), std::string(JobLogs::kMaxLineBytes - 2, 'a'));
  // And the page goes over the wire.
  v1::GetJobLogsResponse response;
  for (const v1::LogEntry& e : page.lines) *response.add_lines() = e;
  std::string wire;
  EXPECT_TRUE(response.SerializeToString(&wire));
  v1::GetJobLogsResponse back;
  EXPECT_TRUE(back.ParseFromString(wire));
}

}  // namespace
}  // namespace gradsync
