// Rendezvous over a real server: W simulated workers (threads) get each rank
// exactly once, bootstrap through the key-value store and meet at barriers.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/client/remote_store.h"
#include "foundation/store/prefix_store.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

grpc::Status StoreSet(TestCluster& c, const SimWorker& w,
                      const v1::Assignment& a, const std::string& key,
                      const std::string& value) {
  v1::StoreSetRequest request;
  request.mutable_task()->set_worker_id(w.id());
  request.mutable_task()->set_job_id(a.job_id());
  request.mutable_task()->set_attempt(a.attempt());
  request.mutable_task()->set_rank(a.rank());  // writes act as a rank
  request.set_key(key);
  request.set_value(value);
  v1::StoreSetResponse response;
  return c.workers().StoreSet(w.Context().get(), request, &response);
}

grpc::Status StoreGet(TestCluster& c, const SimWorker& w,
                      const v1::Assignment& a, const std::string& key,
                      int64_t timeout_ms, std::string* value) {
  v1::StoreGetRequest request;
  request.mutable_task()->set_worker_id(w.id());
  request.mutable_task()->set_job_id(a.job_id());
  request.mutable_task()->set_attempt(a.attempt());
  request.set_key(key);
  request.set_timeout_ms(timeout_ms);
  v1::StoreGetResponse response;
  grpc::Status s =
      c.workers().StoreGet(w.Context(30).get(), request, &response);
  *value = response.value();
  return s;
}

grpc::Status Barrier(TestCluster& c, const SimWorker& w,
                     const v1::Assignment& a, const std::string& name,
                     int64_t timeout_ms) {
  v1::BarrierRequest request;
  request.mutable_task()->set_worker_id(w.id());
  request.mutable_task()->set_job_id(a.job_id());
  request.mutable_task()->set_attempt(a.attempt());
  request.set_name(name);
  request.mutable_task()->set_rank(a.rank());
  request.set_timeout_ms(timeout_ms);
  v1::BarrierResponse response;
  return c.workers().Barrier(w.Context(30).get(), request, &response);
}

class RendezvousTest : public ::testing::TestWithParam<int> {};

TEST_P(RendezvousTest, EachRankOnceStoreAndBarrier) {
  const int world = GetParam();
  TestCluster c;
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int i = 0; i < world; ++i) {
    workers.push_back(
        std::make_unique<SimWorker>(c.workers(), i % 2 ? "host-b" : "host-a"));
  }
  // One extra idle worker must not be picked for a world of `world`.
  SimWorker spare(c.workers(), "host-c");
  (void)spare;
  v1::Job job = c.Submit(c.Spec(world));

  absl::Mutex mu;
  std::multiset<int> ranks;
  std::vector<std::string> seen_by_rank0;
  std::vector<std::thread> threads;
  for (int i = 0; i < world; ++i) {
    threads.emplace_back([&, i] {
      SimWorker& w = *workers[i];
      v1::Assignment a = w.AwaitAssignment();
      EXPECT_EQ(a.world_size(), world);
      EXPECT_EQ(a.job_id(), job.id());
      EXPECT_EQ(a.peers_size(), world);
      EXPECT_EQ(a.peers(0).host(), a.master_addr());
      EXPECT_GT(a.master_port(), 0);
      {
        absl::MutexLock lock(&mu);
        ranks.insert(a.rank());
      }
      // Each rank publishes its address; every rank reads all of them.
      ASSERT_TRUE(StoreSet(c, w, a, "addr/" + std::to_string(a.rank()),
                           "host:" + std::to_string(a.rank()))
                      .ok());
      for (int r = 0; r < world; ++r) {
        std::string value;
        grpc::Status s =
            StoreGet(c, w, a, "addr/" + std::to_string(r), 20000, &value);
        ASSERT_TRUE(s.ok()) << s.error_message();
        EXPECT_EQ(value, "host:" + std::to_string(r));
      }
      v1::StoreAddRequest add;
      add.mutable_task()->set_worker_id(w.id());
      add.mutable_task()->set_job_id(a.job_id());
      add.mutable_task()->set_attempt(a.attempt());
      add.mutable_task()->set_rank(a.rank());
      add.set_key("joined");
      add.set_delta(1);
      v1::StoreAddResponse added;
      ASSERT_TRUE(c.workers().StoreAdd(w.Context().get(), add, &added).ok());
      EXPECT_GE(added.value(), 1);
      grpc::Status s = Barrier(c, w, a, "start", 20000);
      EXPECT_TRUE(s.ok()) << s.error_message();
    });
  }
  for (auto& t : threads) t.join();
  std::multiset<int> expected;
  for (int r = 0; r < world; ++r) expected.insert(r);
  EXPECT_EQ(ranks, expected);
  v1::Job running = c.Get(job.id());
  EXPECT_EQ(running.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(running.world_size(), world);

  for (auto& w : workers) ASSERT_TRUE(w->Complete(true).ok());
  EXPECT_EQ(c.Get(job.id()).state(), v1::JOB_STATE_SUCCEEDED);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, RendezvousTest,
                         ::testing::Values(1, 2, 3, 4, 8));

TEST(RendezvousTest, StoreGetTimesOutNamingTheKey) {
  TestCluster c;
  SimWorker w(c.workers(), "host-a");
  c.Submit(c.Spec(1));
  v1::Assignment a = w.AwaitAssignment();
  std::string value;
  grpc::Status s = StoreGet(c, w, a, "never-set", 50, &value);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(s.error_message().find("never-set"), std::string::npos);

  v1::StoreWaitRequest wait;
  wait.mutable_task()->set_worker_id(w.id());
  wait.mutable_task()->set_job_id(a.job_id());
  wait.mutable_task()->set_attempt(a.attempt());
  wait.add_keys("x");
  wait.add_keys("y");
  wait.set_timeout_ms(50);
  v1::StoreWaitResponse ignored;
  ASSERT_TRUE(StoreSet(c, w, a, "x", "1").ok());
  s = c.workers().StoreWait(w.Context().get(), wait, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(s.error_message().find("missing keys: y"), std::string::npos)
      << s.error_message();
}

// What a rank's bootstrap does with the client's store: its address in,
// every peer's address out in one StoreMultiGet, through a PrefixStore.
TEST(RendezvousTest, MultiGetThroughRemoteStoreReadsEveryRank) {
  TestCluster c;
  constexpr int kWorld = 3;
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int i = 0; i < kWorld; ++i) {
    workers.push_back(std::make_unique<SimWorker>(c.workers(), "host-a"));
  }
  c.Submit(c.Spec(kWorld));
  std::shared_ptr<v1::WorkerService::StubInterface> stub =
      v1::WorkerService::NewStub(
          grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  std::vector<std::string> keys;
  for (int r = 0; r < kWorld; ++r) keys.push_back(absl::StrCat("addr/", r));
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorld; ++i) {
    threads.emplace_back([&, i] {
      v1::Assignment a = workers[i]->AwaitAssignment();
      v1::TaskRef task;
      task.set_worker_id(workers[i]->id());
      task.set_job_id(a.job_id());
      task.set_attempt(a.attempt());
      task.set_rank(a.rank());
      PrefixStore store("boot/", std::make_shared<RemoteStore>(
                                     stub, task, workers[i]->key()));
      ASSERT_TRUE(
          store
              .Set(absl::StrCat("addr/", a.rank()), absl::StrCat("h", a.rank()))
              .ok());
      auto values = store.MultiGet(keys, absl::Seconds(20));
      ASSERT_TRUE(values.ok()) << values.status();
      EXPECT_EQ(*values, (std::vector<std::string>{"h0", "h1", "h2"}));
      // One key nobody writes: the error names it, under its prefix.
      auto missing =
          store.MultiGet({"addr/0", "never"}, absl::Milliseconds(50));
      EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
      EXPECT_NE(missing.status().message().find("boot/never"),
                std::string::npos)
          << missing.status();
    });
  }
  for (auto& t : threads) t.join();
}

TEST(RendezvousTest, BarrierTimeoutNamesMissingRanks) {
  TestCluster c;
  std::vector<std::unique_ptr<SimWorker>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(std::make_unique<SimWorker>(c.workers(), "host-a"));
  }
  c.Submit(c.Spec(3));
  std::vector<v1::Assignment> a;
  for (auto& w : workers) a.push_back(w->AwaitAssignment());
  // Only rank 0 arrives: it times out naming ranks 1 and 2.
  const int i = a[0].rank() == 0 ? 0 : a[1].rank() == 0 ? 1 : 2;
  grpc::Status s = Barrier(c, *workers[i], a[i], "epoch-0", 100);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(s.error_message().find("waiting for rank(s) 1, 2"),
            std::string::npos)
      << s.error_message();
}

TEST(RendezvousTest, StaleAttemptAndUnknownJobAreRejected) {
  TestCluster c;
  SimWorker w(c.workers(), "host-a");
  c.Submit(c.Spec(1));
  v1::Assignment a = w.AwaitAssignment();
  a.set_attempt(a.attempt() + 1);
  EXPECT_EQ(StoreSet(c, w, a, "k", "v").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  a.set_job_id("job-999999");
  EXPECT_EQ(StoreSet(c, w, a, "k", "v").error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST(RendezvousTest, CancelWakesBlockedStoreCalls) {
  TestCluster c;
  SimWorker w(c.workers(), "host-a");
  v1::Job job = c.Submit(c.Spec(1));
  v1::Assignment a = w.AwaitAssignment();
  std::thread canceller([&] {
    // Cancel once the get is (very likely) blocked; correctness does not
    // depend on the order: a get after the cancel fails the same way.
    v1::CancelJobRequest cancel;
    cancel.set_job_id(job.id());
    v1::Job ignored;
    EXPECT_TRUE(c.jobs().CancelJob(Ctx().get(), cancel, &ignored).ok());
  });
  std::string value;
  grpc::Status s = StoreGet(c, w, a, "never", 20000, &value);
  canceller.join();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED) << s.error_message();
  EXPECT_NE(s.error_message().find("CANCELLED"), std::string::npos);
}

// backend auto resolves to NCCL only when every rank has a GPU; backend
// nccl waits for (and only takes) workers with one.
TEST(BackendTest, ResolvedFromTheWorkersDevices) {
  TestCluster c;
  SimWorker cpu(c.workers(), "host-a");
  v1::Job job = c.Submit(c.Spec(1));  // auto
  v1::Assignment a = cpu.AwaitAssignment();
  EXPECT_EQ(a.backend(), v1::BACKEND_GLOO);
  EXPECT_EQ(c.Get(job.id()).backend(), v1::BACKEND_GLOO);
  ASSERT_TRUE(cpu.Complete(true).ok());

  SimWorker gpu(c.workers(), "host-b", /*gpus=*/1);
  v1::JobSpec nccl = c.Spec(1);
  nccl.set_backend(v1::BACKEND_NCCL);
  job = c.Submit(nccl);
  a = gpu.AwaitAssignment();  // the CPU worker, idle longer, is passed over
  EXPECT_EQ(a.backend(), v1::BACKEND_NCCL);
  bool named = false;  // the RENDEZVOUS transition names the backend
  const v1::Job started = c.Get(job.id());
  for (const auto& t : started.transitions()) {
    named |= t.reason().find("backend nccl") != std::string::npos;
  }
  EXPECT_TRUE(named);
  ASSERT_TRUE(gpu.Complete(true).ok());

  v1::JobSpec two = c.Spec(2);
  two.set_backend(v1::BACKEND_NCCL);
  job = c.Submit(two);
  v1::HeartbeatResponse r;
  ASSERT_TRUE(cpu.Heartbeat(&r).ok());
  ASSERT_TRUE(gpu.Heartbeat(&r).ok());
  const v1::Job waiting = c.Get(job.id());
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_PENDING);
  EXPECT_NE(waiting.message().find("1 of 2 idle worker(s) have a GPU"),
            std::string::npos)
      << waiting.message();
}

// One GPU per rank: three workers on a 2-GPU host that each see both GPUs
// (no CUDA_VISIBLE_DEVICES) run at most two nccl ranks, on distinct GPUs,
// across jobs too; the third waits with a reason that says why.
TEST(BackendTest, AHostRunsNoMoreNcclRanksThanItHasGpus) {
  TestCluster c;
  const std::vector<std::string> both = {"GPU-aaaa", "GPU-bbbb"};
  SimWorker w1(c.workers(), "host-a", both);
  SimWorker w2(c.workers(), "host-a", both);
  SimWorker w3(c.workers(), "host-a", both);
  v1::JobSpec three = c.Spec(3);
  three.set_backend(v1::BACKEND_NCCL);
  v1::Job job = c.Submit(three);
  v1::HeartbeatResponse r;
  ASSERT_TRUE(w1.Heartbeat(&r).ok());
  v1::Job waiting = c.Get(job.id());
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_PENDING);
  EXPECT_NE(waiting.message().find("3 of 3 idle worker(s) have a GPU, 2 of "
                                   "them a free one"),
            std::string::npos)
      << waiting.message();
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job.id());
  v1::Job ignored;
  ASSERT_TRUE(c.jobs().CancelJob(Ctx().get(), cancel, &ignored).ok());

  v1::JobSpec two = c.Spec(2);
  two.set_backend(v1::BACKEND_NCCL);
  job = c.Submit(two);
  v1::Assignment a1 = w1.AwaitAssignment();
  v1::Assignment a2 = w2.AwaitAssignment();
  const v1::Job started = c.Get(job.id());
  ASSERT_EQ(started.ranks_size(), 2);
  EXPECT_NE(started.ranks(0).gpu(), started.ranks(1).gpu());
  EXPECT_NE(a1.cuda_device(), a2.cuda_device());
  for (const v1::Assignment* a : {&a1, &a2}) {
    EXPECT_EQ(started.ranks(a->rank()).cuda_device(), a->cuda_device());
    EXPECT_EQ(both[a->cuda_device()], started.ranks(a->rank()).gpu());
  }

  // Both GPUs are busy: a one-rank nccl job waits although w3 is idle.
  v1::JobSpec one = c.Spec(1);
  one.set_backend(v1::BACKEND_NCCL);
  v1::Job second = c.Submit(one);
  ASSERT_TRUE(w3.Heartbeat(&r).ok());
  EXPECT_FALSE(r.action() == v1::ACTION_RUN);
  waiting = c.Get(second.id());
  EXPECT_EQ(waiting.state(), v1::JOB_STATE_PENDING);
  EXPECT_NE(waiting.message().find("0 of them a free one"), std::string::npos)
      << waiting.message();
  // A gloo job may still use w3 (it computes on the CPU).
  ASSERT_TRUE(w1.Complete(true).ok());
  ASSERT_TRUE(w2.Complete(true).ok());
  c.WaitForState(job.id(), v1::JOB_STATE_SUCCEEDED);
  // The GPUs are free again: the waiting job starts.
  v1::Assignment a3 = w3.AwaitAssignment();
  EXPECT_EQ(a3.job_id(), second.id());
  EXPECT_EQ(a3.backend(), v1::BACKEND_NCCL);
}

// A worker that restricts itself with CUDA_VISIBLE_DEVICES sees the host's
// second GPU as its cuda:0; a worker seeing both then gets the first.
TEST(BackendTest, EachRankUsesItsOwnWorkersDeviceIndex) {
  TestCluster c;
  SimWorker only_b(c.workers(), "host-a", std::vector<std::string>{"GPU-b"});
  SimWorker both(c.workers(), "host-a",
                 std::vector<std::string>{"GPU-a", "GPU-b"});
  v1::JobSpec two = c.Spec(2);
  two.set_backend(v1::BACKEND_NCCL);
  v1::Job job = c.Submit(two);
  v1::Assignment a = only_b.AwaitAssignment();
  v1::Assignment b = both.AwaitAssignment();
  EXPECT_EQ(a.cuda_device(), 0);
  EXPECT_EQ(b.cuda_device(), 0);  // GPU-a, its own index 0
  const v1::Job started = c.Get(job.id());
  EXPECT_EQ(started.ranks(a.rank()).gpu(), "GPU-b");
  EXPECT_EQ(started.ranks(b.rank()).gpu(), "GPU-a");
}

}  // namespace
}  // namespace gradsync::testing
