// Workers that live for one job (RegisterWorkerRequest.job_id and
// exit_after_job, what `gradsync-worker --job / --exit-after-job` sends):
// they are scheduled only onto that job, other jobs never take them, and
// once the job has ended their heartbeats answer EXIT with its state.
#include <gtest/gtest.h>

#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

v1::RegisterWorkerRequest ForJob(const std::string& job_id,
                                 bool exit_after_job = false) {
  v1::RegisterWorkerRequest request;
  request.set_host("127.0.0.1");
  request.set_job_id(job_id);
  request.set_exit_after_job(exit_after_job);
  return request;
}

// Heartbeats while idle until the answer is not NONE (at most ~2 s).
v1::HeartbeatResponse BeatUntilAction(SimWorker& w) {
  v1::HeartbeatResponse response;
  for (int i = 0; i < 200; ++i) {
    response.Clear();
    grpc::Status s = w.Heartbeat(&response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (response.action() != v1::ACTION_NONE) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return response;
}

TEST(OneJobWorkerTest, AWorkerForOneJobIsNotTakenByAnEarlierJob) {
  TestCluster cluster;
  const v1::Job first = cluster.Submit(cluster.Spec(1));
  const v1::Job second = cluster.Submit(cluster.Spec(1));
  SimWorker for_second(cluster.workers(), ForJob(second.id()));
  // The first job is older and waits for a worker, but this one is not its.
  const v1::Assignment a = for_second.AwaitAssignment();
  EXPECT_EQ(a.job_id(), second.id());
  EXPECT_EQ(cluster.Get(first.id()).state(), v1::JOB_STATE_PENDING);
  // An ordinary worker serves the first.
  SimWorker any(cluster.workers(), "127.0.0.1");
  EXPECT_EQ(any.AwaitAssignment().job_id(), first.id());
}

TEST(OneJobWorkerTest, ExitsWithTheJobsStateAndTakesNoOtherJob) {
  TestCluster cluster;
  SimWorker w(cluster.workers(), ForJob("", /*exit_after_job=*/true));
  const v1::Job job = cluster.Submit(cluster.Spec(1));
  ASSERT_EQ(w.AwaitAssignment().job_id(), job.id());
  // A job submitted meanwhile waits: this worker lives for the first one.
  const v1::Job other = cluster.Submit(cluster.Spec(1));
  ASSERT_TRUE(w.Complete(true).ok());
  EXPECT_EQ(cluster.WaitForState(job.id(), v1::JOB_STATE_SUCCEEDED).state(),
            v1::JOB_STATE_SUCCEEDED);
  const v1::HeartbeatResponse exit = BeatUntilAction(w);
  EXPECT_EQ(exit.action(), v1::ACTION_EXIT);
  EXPECT_EQ(exit.job_state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_NE(exit.reason().find(job.id()), std::string::npos) << exit.reason();
  EXPECT_EQ(cluster.Get(other.id()).state(), v1::JOB_STATE_PENDING);
}

TEST(OneJobWorkerTest, AFailedJobAnswersExitWithFailed) {
  TestCluster cluster;
  v1::JobSpec spec = cluster.Spec(1);
  spec.set_max_restarts(0);
  const v1::Job job = cluster.Submit(spec);
  SimWorker w(cluster.workers(), ForJob(job.id()));
  ASSERT_EQ(w.AwaitAssignment().job_id(), job.id());
  ASSERT_TRUE(w.Complete(false, "loss is nan").ok());
  EXPECT_EQ(cluster.WaitForState(job.id(), v1::JOB_STATE_FAILED).state(),
            v1::JOB_STATE_FAILED);
  const v1::HeartbeatResponse exit = BeatUntilAction(w);
  EXPECT_EQ(exit.action(), v1::ACTION_EXIT);
  EXPECT_EQ(exit.job_state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(exit.reason().find("loss is nan"), std::string::npos)
      << exit.reason();
}

TEST(OneJobWorkerTest, AWorkerForAnEndedJobIsToldAtItsFirstHeartbeat) {
  TestCluster cluster;
  const v1::Job job = cluster.Submit(cluster.Spec(1));
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job.id());
  v1::Job cancelled;
  ASSERT_TRUE(cluster.jobs().CancelJob(Ctx().get(), cancel, &cancelled).ok());
  SimWorker w(cluster.workers(), ForJob(job.id()));
  const v1::HeartbeatResponse exit = BeatUntilAction(w);
  EXPECT_EQ(exit.action(), v1::ACTION_EXIT);
  EXPECT_EQ(exit.job_state(), v1::JOB_STATE_CANCELLED);
}

TEST(OneJobWorkerTest, RegisteringForAnUnknownJobIsNotFound) {
  TestCluster cluster;
  grpc::Status status;
  SimWorker w(cluster.workers(), ForJob("job-999999"), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("job-999999"), std::string::npos)
      << status.error_message();
}

TEST(OneJobWorkerTest, TheWorkerListShowsTheJobAWorkerLivesFor) {
  TestCluster cluster;
  const v1::Job job = cluster.Submit(cluster.Spec(2));
  SimWorker w(cluster.workers(), ForJob(job.id()));
  v1::ListWorkersRequest request;
  v1::ListWorkersResponse response;
  ASSERT_TRUE(cluster.jobs().ListWorkers(Ctx().get(), request, &response).ok());
  ASSERT_EQ(response.workers_size(), 1);
  EXPECT_EQ(response.workers(0).lives_for_job(), job.id());
}

}  // namespace
}  // namespace gradsync::testing
