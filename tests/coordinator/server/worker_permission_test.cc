// A worker acts only as itself and only for the job attempt and rank it was
// assigned: calls with another worker's id, without its key, for a job it
// does not run or as another rank are PERMISSION_DENIED naming why.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "coordinator/server/auth.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

class WorkerPermissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<SimWorker>(c_.workers(), "host-a");
    b_ = std::make_unique<SimWorker>(c_.workers(), "host-b");
    job_ = c_.Submit(c_.Spec(2));
    a_->AwaitAssignment();
    b_->AwaitAssignment();
    // Registered after the job started: idle, assigned nothing.
    spare_ = std::make_unique<SimWorker>(c_.workers(), "host-c");
  }

  // Worker `w`'s assignment.
  int RankOf(const SimWorker& w) const { return w.task()->rank(); }

  grpc::Status StoreSet(const std::string& worker_id,
                        std::unique_ptr<grpc::ClientContext> ctx) {
    v1::StoreSetRequest request;
    request.mutable_task()->set_worker_id(worker_id);
    request.mutable_task()->set_job_id(job_.id());
    request.mutable_task()->set_attempt(1);
    request.set_key("k");
    request.set_value("v");
    v1::StoreSetResponse response;
    return c_.workers().StoreSet(ctx.get(), request, &response);
  }

  grpc::Status GetShard(const SimWorker& w, int rank) {
    v1::GetShardRequest request;
    request.mutable_task()->set_worker_id(w.id());
    request.mutable_task()->set_job_id(job_.id());
    request.mutable_task()->set_attempt(1);
    request.mutable_task()->set_rank(rank);
    v1::GetShardResponse response;
    return c_.workers().GetShard(w.Context().get(), request, &response);
  }

  TestCluster c_;
  std::unique_ptr<SimWorker> a_, b_, spare_;
  v1::Job job_;
};

std::string LedgerText(const v1::Job& job) {
  std::string text;
  for (const v1::EpochLedger& e : job.ledger()) text += e.DebugString();
  return text;
}

void ExpectDenied(const grpc::Status& s, const std::string& says) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << s.error_message();
  EXPECT_NE(s.error_message().find(says), std::string::npos)
      << s.error_message();
}

TEST_F(WorkerPermissionTest, AssignedWorkersMayActForTheirOwnRank) {
  EXPECT_TRUE(StoreSet(a_->id(), a_->Context()).ok());
  EXPECT_TRUE(GetShard(*a_, RankOf(*a_)).ok());
  EXPECT_TRUE(GetShard(*b_, RankOf(*b_)).ok());
}

TEST_F(WorkerPermissionTest, AnotherWorkersIdNeedsItsKey) {
  // No key at all, then worker b's key for worker a's id.
  ExpectDenied(StoreSet(a_->id(), Ctx()), "missing worker key");
  ExpectDenied(StoreSet(a_->id(), b_->Context()), "wrong worker key");
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id(a_->id());
  v1::HeartbeatResponse response;
  ExpectDenied(c_.workers().Heartbeat(spare_->Context().get(), hb, &response),
               "wrong worker key");
}

TEST_F(WorkerPermissionTest, AWorkerNotInTheJobIsDenied) {
  ExpectDenied(StoreSet(spare_->id(), spare_->Context()),
               "worker " + spare_->id() + " is not assigned to job " +
                   job_.id() + " attempt 1");
  ExpectDenied(GetShard(*spare_, 0), "is not assigned");
}

TEST_F(WorkerPermissionTest, ARankActsOnlyAsItself) {
  const int other = 1 - RankOf(*a_);
  ExpectDenied(GetShard(*a_, other),
               "is rank " + std::to_string(RankOf(*a_)) + " of job " +
                   job_.id() + " attempt 1, not rank " + std::to_string(other));

  v1::BarrierRequest barrier;
  barrier.mutable_task()->set_worker_id(a_->id());
  barrier.mutable_task()->set_job_id(job_.id());
  barrier.mutable_task()->set_attempt(1);
  barrier.set_name("start");
  barrier.mutable_task()->set_rank(other);
  barrier.set_timeout_ms(10);
  v1::BarrierResponse ignored_barrier;
  ExpectDenied(
      c_.workers().Barrier(a_->Context().get(), barrier, &ignored_barrier),
      "not rank");

  // Completing another rank's task would let one worker finish the job.
  v1::CompleteTaskRequest complete;
  complete.mutable_task()->set_worker_id(a_->id());
  complete.mutable_task()->set_job_id(job_.id());
  complete.mutable_task()->set_attempt(1);
  complete.mutable_task()->set_rank(other);
  complete.set_success(true);
  v1::CompleteTaskResponse ignored_complete;
  ExpectDenied(c_.workers().CompleteTask(a_->Context().get(), complete,
                                         &ignored_complete),
               "not rank");
  EXPECT_EQ(c_.Get(job_.id()).state(), v1::JOB_STATE_RUNNING);
}

TEST_F(WorkerPermissionTest, MetricsOnlyForTheReportersRank) {
  const SimWorker& rank1 = RankOf(*a_) == 1 ? *a_ : *b_;
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(rank1.id());
  report.mutable_task()->set_job_id(job_.id());
  report.mutable_task()->set_attempt(1);
  report.add_steps()->set_rank(1);
  v1::ReportMetricsResponse ignored;
  EXPECT_TRUE(
      c_.workers().ReportMetrics(rank1.Context().get(), report, &ignored).ok());
  // Evaluation results come from rank 0 only.
  report.add_eval()->set_accuracy(0.5);
  ExpectDenied(
      c_.workers().ReportMetrics(rank1.Context().get(), report, &ignored),
      "ranks 0, 1");
  report.clear_eval();
  report.add_steps()->set_rank(0);
  ExpectDenied(
      c_.workers().ReportMetrics(rank1.Context().get(), report, &ignored),
      "own rank only");
  EXPECT_EQ(c_.Get(job_.id()).metrics().eval_size(), 0);
}

// A checkpoint commit sets the resume point and records samples as trained:
// only the attempt's rank 0 may send one, and only within the job's epochs.
TEST_F(WorkerPermissionTest, CheckpointsOnlyFromRankZero) {
  const SimWorker& rank0 = RankOf(*a_) == 0 ? *a_ : *b_;
  const SimWorker& rank1 = RankOf(*a_) == 1 ? *a_ : *b_;
  ASSERT_TRUE(GetShard(rank0, 0).ok());  // epoch 0's ledger segment
  const v1::Job before = c_.Get(job_.id());
  ASSERT_EQ(before.ledger_size(), 1);
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(rank1.id());
  report.mutable_task()->set_job_id(job_.id());
  report.mutable_task()->set_attempt(1);
  v1::CheckpointCommit* commit = report.add_checkpoints();
  commit->set_path("/tmp/evil.pt");
  commit->set_epoch(before.spec().epochs());
  commit->set_step(1000);
  v1::ReportMetricsResponse ignored;
  ExpectDenied(
      c_.workers().ReportMetrics(rank1.Context().get(), report, &ignored),
      "not rank 0");
  v1::Job after = c_.Get(job_.id());
  EXPECT_EQ(after.resume_checkpoint(), before.resume_checkpoint());
  EXPECT_EQ(LedgerText(after), LedgerText(before));

  // Nor send more than 64 evaluations or commits in one report.
  v1::ReportMetricsRequest flood;
  *flood.mutable_task() = report.task();
  flood.mutable_task()->set_worker_id(rank0.id());
  for (int i = 0; i < 65; ++i) flood.add_eval()->set_accuracy(0.5);
  EXPECT_EQ(c_.workers()
                .ReportMetrics(rank0.Context().get(), flood, &ignored)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // Rank 0 itself cannot commit past the last epoch.
  report.mutable_task()->set_worker_id(rank0.id());
  commit->set_epoch(before.spec().epochs() + 1);
  const grpc::Status s =
      c_.workers().ReportMetrics(rank0.Context().get(), report, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  EXPECT_NE(s.error_message().find("checkpoint commit"), std::string::npos)
      << s.error_message();
  after = c_.Get(job_.id());
  EXPECT_EQ(after.resume_checkpoint(), before.resume_checkpoint());
  EXPECT_EQ(LedgerText(after), LedgerText(before));
}

// Finding: any rank could write any rendezvous key, e.g. rank 0's address
// for gloo or NCCL's unique id, and so point its peers elsewhere. A key
// ending in a rank number (or nccl/unique_id: rank 0) is that rank's.
TEST_F(WorkerPermissionTest, BootstrapKeysAreBoundToTheirRank) {
  const SimWorker& rank0 = RankOf(*a_) == 0 ? *a_ : *b_;
  const SimWorker& rank1 = RankOf(*a_) == 1 ? *a_ : *b_;
  auto set = [&](const SimWorker& w, int rank, const std::string& key) {
    v1::StoreSetRequest request;
    request.mutable_task()->set_worker_id(w.id());
    request.mutable_task()->set_job_id(job_.id());
    request.mutable_task()->set_attempt(1);
    request.mutable_task()->set_rank(rank);
    request.set_key(key);
    request.set_value("addr");
    v1::StoreSetResponse response;
    return c_.workers().StoreSet(w.Context().get(), request, &response);
  };
  EXPECT_TRUE(set(rank1, 1, "p/gloo/1").ok());
  EXPECT_TRUE(set(rank1, 1, "p/gloo/hello/1").ok());
  EXPECT_TRUE(set(rank0, 0, "p/nccl/unique_id").ok());
  EXPECT_TRUE(set(rank1, 1, "shared-key").ok());  // owned by nobody
  ExpectDenied(set(rank1, 1, "p/gloo/0"),
               "store key 'p/gloo/0' belongs to rank 0; rank 1 may not "
               "write it");
  ExpectDenied(set(rank1, 1, "p/nccl/unique_id"), "belongs to rank 0");
  ExpectDenied(set(rank1, 1, "p/rank_0"), "belongs to rank 0");
  // Claiming to be rank 0 does not help: the worker is rank 1.
  ExpectDenied(set(rank1, 0, "p/gloo/0"), "not rank 0");
}

TEST_F(WorkerPermissionTest, StoreCallsNeedAWorkerId) {
  grpc::Status s = StoreSet("", a_->Context());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("worker_id is required"), std::string::npos)
      << s.error_message();
}

// Finding: waiting calls (store gets, barriers, watches) could pin every
// server thread. Past the bound they fail at once, and calls that do not
// wait (heartbeats) still get through.
TEST(WaitingCallsTest, ABoundedNumberWaitAndHeartbeatsGoOn) {
  TestCluster c(absl::Seconds(30), "", /*max_waiting_calls=*/2);
  SimWorker a(c.workers(), "host-a"), b(c.workers(), "host-b");
  const v1::Job job = c.Submit(c.Spec(2));
  a.AwaitAssignment();
  b.AwaitAssignment();
  auto get = [&](int timeout_ms) {
    v1::StoreGetRequest request;
    request.mutable_task()->set_worker_id(a.id());
    request.mutable_task()->set_job_id(job.id());
    request.mutable_task()->set_attempt(1);
    request.set_key("never");
    request.set_timeout_ms(timeout_ms);
    v1::StoreGetResponse response;
    return c.workers().StoreGet(a.Context().get(), request, &response);
  };
  std::vector<std::thread> waiting;
  for (int i = 0; i < 2; ++i) waiting.emplace_back([&] { (void)get(3000); });
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (c.server().waiting_calls() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(c.server().waiting_calls(), 2);
  const absl::Time start = absl::Now();
  const grpc::Status third = get(3000);
  EXPECT_EQ(third.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(third.error_message().find("--max-waiting-calls"),
            std::string::npos)
      << third.error_message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  v1::HeartbeatResponse r;
  EXPECT_TRUE(a.Heartbeat(&r).ok());
  for (std::thread& t : waiting) t.join();
  EXPECT_EQ(c.server().waiting_calls(), 0);
  EXPECT_EQ(get(1).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

}  // namespace
}  // namespace gradsync::testing
