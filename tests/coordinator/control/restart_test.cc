// Elastic recovery over a real server: a failed attempt sends the job back
// to PENDING and a new rendezvous over the live workers resumes from the
// last committed checkpoint; the sample ledger re-shards what that
// checkpoint had not committed, so every sample is trained exactly once;
// the restart limit and the wait for the old attempt's workers are bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/time/clock.h"
#include "coordinator/control/event_log.h"
#include "coordinator/control/job_views.h"
#include "coordinator/server/auth.h"
#include "coordinator/wire/secrets.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

class RestartOfTwoWorkersTest : public TwoWorkerTest {};

std::vector<int64_t> Shard(TestCluster& c, const SimWorker& w, int epoch) {
  const v1::Assignment& a = *w.task();
  v1::GetShardRequest request;
  request.mutable_task()->set_worker_id(w.id());
  request.mutable_task()->set_job_id(a.job_id());
  request.mutable_task()->set_attempt(a.attempt());
  request.mutable_task()->set_rank(a.rank());
  request.set_epoch(epoch);
  v1::GetShardResponse response;
  grpc::Status s = c.workers().GetShard(w.Context().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return {response.indices().begin(), response.indices().end()};
}

// Rank 0 reports a checkpoint at (epoch, epoch_batch) after `step` steps.
void Commit(TestCluster& c, const SimWorker& rank0, const std::string& path,
            int epoch, int64_t epoch_batch, int64_t step) {
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(rank0.id());
  report.mutable_task()->set_job_id(rank0.task()->job_id());
  report.mutable_task()->set_attempt(rank0.task()->attempt());
  v1::CheckpointCommit* commit = report.add_checkpoints();
  commit->set_path(path);
  commit->set_epoch(epoch);
  commit->set_epoch_batch(epoch_batch);
  commit->set_step(step);
  v1::ReportMetricsResponse ignored;
  grpc::Status s =
      c.workers().ReportMetrics(rank0.Context().get(), report, &ignored);
  ASSERT_TRUE(s.ok()) << s.error_message();
}

// Heartbeats `w` until its task is dropped after a STOP.
void StopAndIdle(SimWorker& w) {
  v1::HeartbeatResponse r;
  ASSERT_TRUE(w.Heartbeat(&r).ok());
  EXPECT_EQ(r.action(), v1::ACTION_STOP) << r.reason();
  w.DropTask();
  ASSERT_TRUE(w.Heartbeat(&r).ok());  // idle: released
}

TEST(RestartTest, FailedAttemptResumesOnTheSurvivorWithTheRemainingSamples) {
  // 10 training samples, 2 ranks of batch 2: 5 samples (3 batches) each.
  TestCluster c(absl::Milliseconds(500));
  SimWorker w0(c.workers(), "host-a"), w1(c.workers(), "host-b");
  v1::JobSpec spec = c.Spec(2);
  spec.mutable_world_size()->set_min_workers(1);
  v1::Job job = c.Submit(spec);
  w0.AwaitAssignment();
  w1.AwaitAssignment();
  SimWorker& rank0 = w0.task()->rank() == 0 ? w0 : w1;
  SimWorker& rank1 = w0.task()->rank() == 0 ? w1 : w0;
  const std::vector<int64_t> shard0 = Shard(c, rank0, 0);
  const std::vector<int64_t> shard1 = Shard(c, rank1, 0);
  ASSERT_EQ(shard0.size(), 5u);
  // After 2 batches a checkpoint commits the first 4 samples of each rank.
  Commit(c, rank0, "/ckpt/model-step-2.pt", 0, 2, 2);
  v1::Job now = c.Get(job.id());
  ASSERT_EQ(now.ledger_size(), 1);
  EXPECT_EQ(now.ledger(0).committed(), 8);

  // Rank 1 fails, then goes silent (its process is gone).
  ASSERT_TRUE(rank1.Complete(false, "killed").ok());
  now = c.Get(job.id());
  EXPECT_EQ(now.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(now.restarts(), 1);
  EXPECT_NE(now.message().find("attempt 1 failed: rank 1"), std::string::npos)
      << now.message();
  EXPECT_NE(now.message().find("restart 1 of 3, from /ckpt/model-step-2.pt"),
            std::string::npos)
      << now.message();

  // Rank 0 stops and comes back idle; the restart waits for rank 1's worker
  // until it is declared dead, then runs on rank 0's worker alone.
  StopAndIdle(rank0);
  const v1::Assignment a = rank0.AwaitAssignment(1000, absl::Milliseconds(10));
  EXPECT_EQ(a.attempt(), 2);
  EXPECT_EQ(a.world_size(), 1);
  EXPECT_TRUE(a.resume_remaining());
  EXPECT_EQ(a.spec().checkpoint().resume_from(), "/ckpt/model-step-2.pt");

  // What is left of epoch 0 is exactly what attempt 1 had not committed.
  const std::vector<int64_t> rest = Shard(c, rank0, 0);
  std::map<int64_t, int> trained;
  for (size_t i = 0; i < 4; ++i) ++trained[shard0[i]], ++trained[shard1[i]];
  for (int64_t i : rest) ++trained[i];
  EXPECT_EQ(trained.size(), 10u);
  for (const auto& [index, times] : trained) EXPECT_EQ(times, 1) << index;

  Commit(c, rank0, "/ckpt/model-step-3.pt", 1, 0, 3);
  now = c.Get(job.id());
  ASSERT_EQ(now.ledger(0).segments_size(), 2);
  EXPECT_EQ(now.ledger(0).segments(1).offset(), 8);
  EXPECT_EQ(now.ledger(0).segments(1).world_size(), 1);
  EXPECT_EQ(now.ledger(0).committed(), 10);
  EXPECT_EQ(now.ledger(0).duplicates(), 0);
  ASSERT_EQ(now.attempts_size(), 2);
  EXPECT_NE(now.attempts(0).outcome().find("killed"), std::string::npos);
  EXPECT_EQ(now.attempts(0).committed_step(), 2);
  ASSERT_TRUE(rank0.Complete(true).ok());
  EXPECT_EQ(c.Get(job.id()).state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(RestartOfTwoWorkersTest, TheRestartLimitEndsTheJob) {
  v1::JobSpec spec = c.Spec(2);
  spec.set_max_restarts(1);
  v1::Job job = c.Submit(spec);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    w0.AwaitAssignment();
    w1.AwaitAssignment();
    EXPECT_EQ(w1.task()->attempt(), attempt);
    ASSERT_TRUE(w1.Complete(false, "boom " + std::to_string(attempt)).ok());
    if (attempt == 1) {
      StopAndIdle(w0);
      v1::HeartbeatResponse r;
      ASSERT_TRUE(w1.Heartbeat(&r).ok());  // idle: the restart may start
    }
  }
  v1::Job failed = c.Get(job.id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(failed.message().find("boom 2; restart limit (1) reached"),
            std::string::npos)
      << failed.message();
  EXPECT_EQ(failed.attempts_size(), 2);
}

// Finding (issue 39, 2): every state change copied the whole job into its
// event, so a job with many failed attempts held O(attempts^2) bytes of
// events and grew listing pages without bound. Events and ListJobs carry
// abridged copies (job_views.h); GetJob keeps the whole record.
TEST_F(RestartOfTwoWorkersTest, ManyFailedAttemptsKeepEventsAndListingSmall) {
  v1::JobSpec spec = c.Spec(2);
  spec.set_max_restarts(60);
  v1::Job job = c.Submit(spec);
  constexpr int kAttempts = 30;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    w0.AwaitAssignment();
    w1.AwaitAssignment();
    ASSERT_EQ(w1.task()->attempt(), attempt);
    // Distinct 4 KB errors (the same one twice would end the job).
    ASSERT_TRUE(w1.Complete(false, "UNAVAILABLE: attempt " +
                                       std::to_string(attempt) + " " +
                                       std::string(4000, 'e'))
                    .ok());
    StopAndIdle(w0);
    v1::HeartbeatResponse r;
    ASSERT_TRUE(w1.Heartbeat(&r).ok());
  }
  const v1::Job whole = c.Get(job.id());
  EXPECT_FALSE(whole.abridged());
  EXPECT_EQ(whole.attempts_size(), kAttempts + 1);  // and the pending one
  EXPECT_GT(whole.ByteSizeLong(), size_t{200} << 10);

  absl::StatusOr<std::shared_ptr<EventLog>> log =
      c.server().coordinator().JobEvents(job.id());
  ASSERT_TRUE(log.ok());
  EventLog::Batch events = (*log)->Read(0, absl::Now());
  int job_events = 0;
  for (const v1::JobEvent& event : events.events) {
    if (!event.has_job()) continue;
    ++job_events;
    EXPECT_TRUE(event.job().abridged());
    EXPECT_LE(event.job().attempts_size(), kAbridgedAttempts);
    EXPECT_LT(event.ByteSizeLong(), size_t{40} << 10);
  }
  EXPECT_GE(job_events, 2 * kAttempts);
  EXPECT_LT((*log)->bytes(), size_t{4} << 20);

  v1::ListJobsResponse listed;
  ASSERT_TRUE(
      c.jobs().ListJobs(Ctx().get(), v1::ListJobsRequest(), &listed).ok());
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_TRUE(listed.jobs(0).abridged());
  EXPECT_EQ(listed.jobs(0).ledger_size(), 0);
  EXPECT_LT(listed.jobs(0).ByteSizeLong(), size_t{40} << 10);
}

// Finding: a job that fails the same way on every attempt (a batch that
// cannot be allocated) restarted until its limit. The same error twice in a
// row ends it, saying why.
TEST_F(RestartOfTwoWorkersTest, TheSameErrorTwiceInARowEndsTheJob) {
  v1::JobSpec spec = c.Spec(2);
  spec.set_max_restarts(5);
  v1::Job job = c.Submit(spec);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    w0.AwaitAssignment();
    w1.AwaitAssignment();
    EXPECT_EQ(w1.task()->attempt(), attempt);
    ASSERT_TRUE(w1.Complete(false, "loader: out of memory").ok());
    if (attempt == 1) {
      EXPECT_EQ(c.Get(job.id()).state(), v1::JOB_STATE_PENDING);
      StopAndIdle(w0);
      v1::HeartbeatResponse r;
      ASSERT_TRUE(w1.Heartbeat(&r).ok());
    }
  }
  v1::Job failed = c.Get(job.id());
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(failed.message().find("loader: out of memory; the previous "
                                  "attempt failed with the same error"),
            std::string::npos)
      << failed.message();
  EXPECT_EQ(failed.attempts_size(), 2);
  EXPECT_EQ(failed.restarts(), 1);
}

// The rule holds across a coordinator restart (the error is recorded with
// its attempt, in the job's record).
TEST(RestartTest, TheSameErrorRuleSurvivesACoordinatorRestart) {
  const std::string state = UniqueTempDir("same-error");
  std::string job_id;
  {
    TestCluster c(absl::Seconds(30), state);
    SimWorker w0(c.workers(), "host-a"), w1(c.workers(), "host-a");
    v1::JobSpec spec = c.Spec(2);
    spec.set_max_restarts(5);
    job_id = c.Submit(spec).id();
    w0.AwaitAssignment();
    w1.AwaitAssignment();
    ASSERT_TRUE(w1.Complete(false, "loader: out of memory").ok());
    ASSERT_EQ(c.Get(job_id).state(), v1::JOB_STATE_PENDING);
    c.Stop();
  }
  TestCluster c(absl::Seconds(30), state);
  SimWorker w0(c.workers(), "host-a"), w1(c.workers(), "host-a");
  EXPECT_EQ(w0.AwaitAssignment().attempt(), 2);
  w1.AwaitAssignment();
  ASSERT_TRUE(w1.Complete(false, "loader: out of memory").ok());
  v1::Job failed = c.Get(job_id);
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(failed.message().find("the previous attempt failed with the "
                                  "same error"),
            std::string::npos)
      << failed.message();
  c.Stop();
  std::filesystem::remove_all(state);
}

TEST(RestartTest, AStuckSurvivorDoesNotHoldTheRestartPastItsDeadline) {
  // The survivor keeps heartbeating its old task (stuck in a collective);
  // the restart waits for it only collective_timeout + 2 heartbeat
  // timeouts, then runs on the worker that did come back.
  TestCluster c(absl::Milliseconds(200));
  SimWorker w0(c.workers(), "host-a"), w1(c.workers(), "host-b");
  v1::JobSpec spec = c.Spec(2);
  spec.mutable_world_size()->set_min_workers(1);
  spec.set_collective_timeout_ms(100);
  v1::Job job = c.Submit(spec);
  w0.AwaitAssignment();
  w1.AwaitAssignment();
  ASSERT_TRUE(w1.Complete(false, "peer reset").ok());
  const absl::Time failed_at = absl::Now();
  v1::HeartbeatResponse r;
  ASSERT_TRUE(w1.Heartbeat(&r).ok());  // idle again
  v1::Assignment a;
  while (absl::Now() - failed_at < absl::Seconds(10)) {
    ASSERT_TRUE(w0.Heartbeat(&r).ok());  // still "running" attempt 1
    EXPECT_NE(r.action(), v1::ACTION_RUN);
    ASSERT_TRUE(w1.Heartbeat(&r).ok());
    if (r.action() == v1::ACTION_RUN) {
      a = r.assignment();
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(a.attempt(), 2);
  EXPECT_EQ(a.world_size(), 1);
  EXPECT_GE(absl::Now() - failed_at, absl::Milliseconds(400));
  EXPECT_EQ(c.Get(job.id()).state(), v1::JOB_STATE_RENDEZVOUS);
}

}  // namespace
}  // namespace gradsync::testing

namespace gradsync::testing {
namespace {

v1::RegisterWorkerResponse Resume(TestCluster& c, const std::string& id,
                                  const std::string& key,
                                  const v1::Assignment& task) {
  v1::RegisterWorkerRequest request;
  request.set_host("host-a");
  v1::ResumeTask* r = request.mutable_resume();
  r->mutable_task()->set_worker_id(id);
  r->set_worker_key(key);
  r->mutable_task()->set_job_id(task.job_id());
  r->mutable_task()->set_attempt(task.attempt());
  r->mutable_task()->set_rank(task.rank());
  v1::RegisterWorkerResponse response;
  grpc::Status s = c.workers().RegisterWorker(Ctx().get(), request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response;
}

// A coordinator restarted under a running job keeps it RUNNING and
// re-adopts workers that come back with their task and key; an impostor
// without the key gets a fresh identity; a rank that does not come back
// within the grace fails the attempt (which restarts).
// Finding: curves lived only in the coordinator's memory, so after a
// restart `gradsync plot` of a finished job had no steps. A job's curve
// and newest log lines are stored with it.
TEST(CoordinatorRestartTest, AFinishedJobKeepsItsCurveAndLog) {
  const std::string state = UniqueTempDir("trail-state");
  std::string job_id;
  {
    TestCluster c(absl::Seconds(5), state);
    SimWorker w(c.workers(), "host-a");
    job_id = c.Submit(c.Spec(1)).id();
    const v1::Assignment a = w.AwaitAssignment();
    v1::ReportMetricsRequest report;
    report.mutable_task()->set_worker_id(w.id());
    report.mutable_task()->set_job_id(job_id);
    report.mutable_task()->set_attempt(a.attempt());
    for (int step = 1; step <= 3; ++step) {
      v1::StepMetrics* m = report.add_steps();
      m->set_step(step);
      m->set_loss(1.0 / step);
    }
    report.add_logs()->set_text("epoch 1: test accuracy 88.80%");
    v1::ReportMetricsResponse ignored;
    ASSERT_TRUE(
        c.workers().ReportMetrics(w.Context().get(), report, &ignored).ok());
    ASSERT_TRUE(w.Complete(true).ok());
    ASSERT_EQ(c.Get(job_id).state(), v1::JOB_STATE_SUCCEEDED);
  }
  TestCluster c(absl::Seconds(5), state);
  v1::GetJobCurvesRequest curves_request;
  curves_request.set_job_id(job_id);
  v1::JobCurves curves;
  ASSERT_TRUE(c.jobs().GetJobCurves(Ctx().get(), curves_request, &curves).ok());
  ASSERT_EQ(curves.train_size(), 3);
  EXPECT_EQ(curves.train(2).step(), 3);
  v1::GetJobLogsRequest logs_request;
  logs_request.set_job_id(job_id);
  v1::GetJobLogsResponse logs;
  ASSERT_TRUE(c.jobs().GetJobLogs(Ctx().get(), logs_request, &logs).ok());
  ASSERT_EQ(logs.lines_size(), 1);
  EXPECT_EQ(logs.lines(0).text(), "epoch 1: test accuracy 88.80%");
  c.Stop();
  std::filesystem::remove_all(state);
}

TEST(CoordinatorRestartTest, RunningJobsWaitForTheirWorkersToReRegister) {
  const std::string state = UniqueTempDir("restart-state");
  std::string job_id, key0, key1, id0, id1;
  v1::Assignment task0, task1;
  {
    TestCluster c(absl::Milliseconds(500), state);
    SimWorker w0(c.workers(), "host-a"), w1(c.workers(), "host-a");
    job_id = c.Submit(c.Spec(2)).id();
    task0 = w0.AwaitAssignment();
    task1 = w1.AwaitAssignment();
    id0 = w0.id(), key0 = w0.key(), id1 = w1.id(), key1 = w1.key();
    ASSERT_EQ(c.Get(job_id).state(), v1::JOB_STATE_RUNNING);
  }
  TestCluster c(absl::Milliseconds(500), state);
  EXPECT_EQ(c.Get(job_id).state(), v1::JOB_STATE_RUNNING);
  const v1::RegisterWorkerResponse back = Resume(c, id0, key0, task0);
  EXPECT_TRUE(back.resumed());
  EXPECT_EQ(back.worker_id(), id0);
  const v1::RegisterWorkerResponse impostor = Resume(c, id1, key0, task1);
  EXPECT_FALSE(impostor.resumed());
  EXPECT_NE(impostor.worker_id(), id1);

  // Rank 1's worker never comes back: after the grace (0.5 s) the attempt
  // fails naming it; rank 0's worker heartbeats its task meanwhile, and the
  // impostor heartbeats as an idle worker (alive, so the restart has the 2
  // workers it needs; without it, whether it died before the grace ended
  // would decide between PENDING and FAILED).
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id(id0);
  hb.set_state(v1::WORKER_STATE_RUNNING);
  hb.mutable_task()->set_job_id(job_id);
  hb.mutable_task()->set_attempt(task0.attempt());
  hb.mutable_task()->set_rank(task0.rank());
  v1::HeartbeatRequest idle;
  idle.mutable_task()->set_worker_id(impostor.worker_id());
  idle.set_state(v1::WORKER_STATE_IDLE);
  v1::Job job;
  for (int i = 0; i < 100; ++i) {
    auto ctx = Ctx();
    ctx->AddMetadata(kWorkerKeyHeader, key0);
    v1::HeartbeatResponse r;
    ASSERT_TRUE(c.workers().Heartbeat(ctx.get(), hb, &r).ok());
    auto idle_ctx = Ctx();
    idle_ctx->AddMetadata(kWorkerKeyHeader, impostor.worker_key());
    ASSERT_TRUE(c.workers().Heartbeat(idle_ctx.get(), idle, &r).ok());
    job = c.Get(job_id);
    if (job.state() != v1::JOB_STATE_RUNNING) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_NE(job.message().find("rank " + std::to_string(task1.rank()) +
                               " (worker " + id1 +
                               " on host host-a) did not re-register within "
                               "0.5 s after the coordinator restarted"),
            std::string::npos)
      << job.message();
  c.Stop();
  std::filesystem::remove_all(state);
}

}  // namespace
}  // namespace gradsync::testing

namespace gradsync::testing {
namespace {

// Cancel while a restart waits for the failed attempt's workers: the job
// ends CANCELLED, no new attempt starts, and every worker ends idle and
// takes the next job.
TEST_F(RestartOfTwoWorkersTest,
       CancelDuringARestartLeavesEveryWorkerIdleAndReusable) {
  v1::Job job = c.Submit(c.Spec(2));
  const int port = w0.AwaitAssignment().master_port();
  w1.AwaitAssignment();
  ASSERT_TRUE(w1.Complete(false, "boom").ok());
  ASSERT_EQ(c.Get(job.id()).state(), v1::JOB_STATE_PENDING);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job.id());
  v1::Job cancelled;
  ASSERT_TRUE(c.jobs().CancelJob(Ctx().get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled.attempts_size(), 1);  // no second attempt started
  StopAndIdle(w0);
  v1::HeartbeatResponse r;
  ASSERT_TRUE(w1.Heartbeat(&r).ok());
  EXPECT_EQ(r.action(), v1::ACTION_NONE);
  v1::Job next = c.Submit(c.Spec(2));
  EXPECT_EQ(w0.AwaitAssignment().job_id(), next.id());
  EXPECT_EQ(w1.AwaitAssignment().job_id(), next.id());
  // The failed attempt's data-plane port was released for reuse.
  EXPECT_EQ(c.Get(next.id()).master_port(), port);
}

}  // namespace
}  // namespace gradsync::testing
