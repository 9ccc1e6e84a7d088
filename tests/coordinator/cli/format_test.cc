// `gradsync status` text: restarts, attempts and the sample ledger.
#include "coordinator/cli/format.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gradsync::cli {
namespace {

TEST(FormatTest, StatusShowsTheWaitForReplacementWorkers) {
  v1::Job job;
  job.set_state(v1::JOB_STATE_PENDING);
  job.mutable_spec()->mutable_world_size()->set_min_workers(3);
  job.mutable_spec()->set_restart_wait_ms(60000);
  job.set_replacement_deadline_unix_ms(100000);
  EXPECT_NE(FormatJobDetail(job, 58000)
                .find("Waiting:    for at least 3 worker(s) to restart with, "
                      "42s more (--restart-wait 1m00s); then the job fails"),
            std::string::npos)
      << FormatJobDetail(job, 58000);
  job.set_state(v1::JOB_STATE_RUNNING);
  EXPECT_EQ(FormatJobDetail(job, 58000).find("Waiting:"), std::string::npos);
}

// Findings (issue 39): a file name with ESC ] 0 ; ... BEL ESC [ 2 J in a
// log line retitled and cleared the terminal of `gradsync logs`; a line
// with "\n[rank 0] ..." printed as a forged rank-0 line; a host name with
// "\n" forged a row of `gradsync workers`.
TEST(FormatTest, OneLineFieldsCannotMoveTheCursorOrForgeLines) {
  v1::LogEntry line;
  line.set_rank(1);
  line.set_text("bad \x1b]0;owned\x07\x1b[2J file\n[rank 0] FORGED");
  EXPECT_EQ(FormatLogLine(line, absl::UTCTimeZone()),
            "[rank 1] bad \\x1b]0;owned\\x07\\x1b[2J file\\x0a[rank 0] "
            "FORGED\n");
  v1::WorkerInfo w;
  w.set_worker_id("w1");
  w.set_host("host\nw9  evil");
  const std::string table = FormatWorkerTable({w}, 0);
  EXPECT_NE(table.find("host\\x0aw9  evil"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2) << table;
}

TEST(FormatTest, LogLinesSayWhenTheyWereLogged) {
  v1::LogEntry line;
  line.set_rank(1);
  line.set_attempt(2);
  line.set_text("epoch 1: test accuracy 88.80%");
  EXPECT_EQ(FormatLogLine(line, absl::UTCTimeZone()),
            "[rank 1, attempt 2] epoch 1: test accuracy 88.80%\n");
  line.set_time_unix_ms(1764151407000);  // 2025-11-26 10:03:27 UTC
  EXPECT_EQ(FormatLogLine(line, absl::UTCTimeZone()),
            "10:03:27 [rank 1, attempt 2] epoch 1: test accuracy 88.80%\n");
}

TEST(FormatTest, SnapshotsSayWhereTheyStandWithEpochsFromOne) {
  v1::SnapshotMeta m;
  EXPECT_EQ(SnapshotPoint(m), "start");
  m.set_epoch(2);
  EXPECT_EQ(SnapshotPoint(m), "end of epoch 2");
  m.set_epoch(1);
  m.set_epoch_batch(120);
  EXPECT_EQ(SnapshotPoint(m), "epoch 2, batch 120");
  const std::string table = FormatSnapshotTable({m}, 0);
  EXPECT_NE(table.find("epoch 2, batch 120"), std::string::npos) << table;
}

TEST(FormatTest, StatusSaysWhereCheckpointsGoAndWhatTheJobStartedFrom) {
  v1::Job job;
  job.set_id("job-000003");
  std::string out = FormatJobDetail(job, 0);
  EXPECT_NE(out.find("Checkpoints: none on the workers; the final weights "
                     "are kept by the coordinator (gradsync model pull "
                     "job-000003)"),
            std::string::npos)
      << out;
  v1::CheckpointSpec* c = job.mutable_spec()->mutable_checkpoint();
  c->set_directory("ckpt");
  c->set_interval_steps(200);
  c->set_resume_snapshot_job("job-000001");
  job.set_resume_checkpoint("/w/ckpt/model-job-000003-step-400.pt");
  job.set_resume_step(400);
  job.set_resume_from_snapshot(true);
  out = FormatJobDetail(job, 0);
  EXPECT_NE(out.find("Checkpoints: ckpt (under each worker's checkpoint "
                     "root), every 200 steps and at the end\n"
                     "  last: step 400, /w/ckpt/model-job-000003-step-400.pt "
                     "(also at the coordinator)\n"
                     "  started from: job-000001's snapshot of its latest "
                     "step\n"),
            std::string::npos)
      << out;
}

TEST(FormatTest, StatusShowsAttemptsAndTheLedger) {
  v1::Job job;
  job.set_id("job-000007");
  job.mutable_spec()->set_max_restarts(3);
  job.set_restarts(1);
  v1::AttemptRecord* a1 = job.add_attempts();
  a1->set_attempt(1);
  a1->set_world_size(3);
  a1->set_committed_step(5);
  a1->set_outcome("rank 1 (worker w2 on host h) missed heartbeats");
  v1::AttemptRecord* a2 = job.add_attempts();
  a2->set_attempt(2);
  a2->set_world_size(2);
  v1::EpochLedger* e = job.add_ledger();
  e->set_samples(2000);
  e->set_committed(2000);
  for (auto [attempt, world, offset, committed] :
       {std::tuple{1, 3, 0, 750}, std::tuple{2, 2, 750, 1250}}) {
    v1::LedgerSegment* s = e->add_segments();
    s->set_attempt(attempt);
    s->set_world_size(world);
    s->set_offset(offset);
    s->set_committed(committed);
  }
  const std::string out = FormatJobDetail(job, 0);
  EXPECT_NE(out.find("1 restart(s) of 3 allowed"), std::string::npos) << out;
  EXPECT_NE(out.find("attempt 1: 3 rank(s), committed through step 5; "
                     "ended: rank 1 (worker w2 on host h) missed heartbeats"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("attempt 2: 2 rank(s), nothing committed"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("epoch 1: 2000/2000 (0 padding duplicate(s); attempt 1: "
                     "3 rank(s), 750 from #0; attempt 2: 2 rank(s), 1250 "
                     "from #750)"),
            std::string::npos)
      << out;
}

}  // namespace
// Finding: strings workers send (host names, failure messages) reached the
// user's terminal raw: an escape sequence could retitle the window, move the
// cursor or hide text. They are escaped; text and UTF-8 stay as they are.
TEST(FormatTest, WhatWorkersSendCannotDriveTheTerminal) {
  EXPECT_EQ(TerminalSafe("ok\tline\nnext \xc3\xa9 \xe2\x96\x88"),
            "ok\tline\nnext \xc3\xa9 \xe2\x96\x88");
  EXPECT_EQ(TerminalSafe("a\x1b]0;pwned\x07"
                         "b\x7f"),
            "a\\x1b]0;pwned\\x07b\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b"
                         "31m"),
            "\\xc2\\x9b"
            "31m");  // C1 CSI
  EXPECT_EQ(TerminalSafe("\r\x1b[2K"), "\\x0d\\x1b[2K");

  v1::WorkerInfo w;
  w.set_worker_id("w-1");
  w.set_host("evil\x1b[8m");
  const std::string table = FormatWorkerTable({w}, 0);
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_NE(table.find("evil\\x1b[8m"), std::string::npos) << table;
  v1::Job job;
  job.set_id("job-1");
  job.set_message("rank 1 failed: \x1b[2J");
  EXPECT_EQ(FormatJobDetail(job, 0).find('\x1b'), std::string::npos);
}

TEST(FormatTest, AnIdleWorkerForOneJobShowsThatJob) {
  v1::WorkerInfo w;
  w.set_worker_id("w-1");
  w.set_state(v1::WORKER_STATE_IDLE);
  w.set_rank(-1);
  w.set_lives_for_job("job-000007");
  EXPECT_NE(FormatWorkerTable({w}, 0).find("for job-000007"),
            std::string::npos);
  w.set_job_id("job-000007");
  w.set_rank(0);
  EXPECT_EQ(FormatWorkerTable({w}, 0).find("for job-000007"),
            std::string::npos);
}

}  // namespace gradsync::cli
