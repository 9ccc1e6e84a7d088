// JobService over a real server: submission, validation, listing, shards,
// metrics, persistence across a restart, oversized messages.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "foundation/data_index/sampler.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

class JobServiceOfTwoWorkersTest : public TwoWorkerTest {};

grpc::Status SubmitStatus(TestCluster& c, const v1::JobSpec& spec) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  v1::Job job;
  return c.jobs().SubmitJob(Ctx().get(), request, &job);
}

TEST(JobServiceTest, SubmitCountsTheDataSetAndQueues) {
  TestCluster c;
  v1::Job job = c.Submit(c.Spec(2));
  EXPECT_EQ(job.id(), "job-000001");
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.train_samples(), 10);
  EXPECT_EQ(job.eval_samples(), 6);
  EXPECT_TRUE(job.spec().shuffle());  // default applied
  ASSERT_EQ(job.transitions_size(), 1);
  EXPECT_EQ(job.transitions(0).to(), v1::JOB_STATE_PENDING);
  EXPECT_GT(job.transitions(0).time_unix_ms(), 0);
}

TEST(JobServiceTest, InvalidSpecsNameTheField) {
  TestCluster c;
  struct Case {
    std::function<void(v1::JobSpec&)> mutate;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](v1::JobSpec& s) { s.mutable_world_size()->set_max_workers(0); },
       "world_size.max_workers"},
      {[](v1::JobSpec& s) { s.set_batch_size(0); }, "batch_size"},
      {[](v1::JobSpec& s) { s.set_model("alexnet"); }, "model"},
      {[](v1::JobSpec& s) { s.mutable_dataset()->clear_path(); },
       "dataset.path"},
      {[](v1::JobSpec& s) { s.mutable_dataset()->set_path("/nonexistent"); },
       "dataset.path"},
      {[](v1::JobSpec& s) { s.mutable_dataset()->set_eval_split("nope"); },
       "dataset.eval_split"},
      {[](v1::JobSpec& s) {
         s.mutable_world_size()->set_min_workers(3);
         s.mutable_world_size()->set_max_workers(2);
       },
       "world_size.min_workers"},
  };
  for (const Case& k : cases) {
    v1::JobSpec spec = c.Spec(2);
    k.mutate(spec);
    grpc::Status s = SubmitStatus(c, spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << k.field;
    EXPECT_NE(s.error_message().find(k.field), std::string::npos)
        << s.error_message();
  }
  v1::ListJobsResponse list;
  ASSERT_TRUE(c.jobs().ListJobs(Ctx().get(), {}, &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);  // nothing half-created
}

TEST(JobServiceTest, UnknownJobAndWorkerAreNotFound) {
  TestCluster c;
  v1::GetJobRequest get;
  get.set_job_id("job-424242");
  v1::Job job;
  EXPECT_EQ(c.jobs().GetJob(Ctx().get(), get, &job).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::CancelJobRequest cancel;
  cancel.set_job_id("job-424242");
  EXPECT_EQ(c.jobs().CancelJob(Ctx().get(), cancel, &job).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::WatchJobRequest watch;
  watch.set_job_id("job-424242");
  auto ctx = Ctx();
  auto reader = c.jobs().WatchJob(ctx.get(), watch);
  v1::JobEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id("w99-dead");
  v1::HeartbeatResponse hb_response;
  grpc::Status s = c.workers().Heartbeat(Ctx().get(), hb, &hb_response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("w99-dead"), std::string::npos);
}

TEST(JobServiceTest, OversizedRequestIsRejected) {
  TestCluster c;
  v1::SubmitJobRequest request;
  *request.mutable_spec() = c.Spec(1);
  request.mutable_spec()->set_name(std::string(5 << 20, 'x'));
  v1::Job job;
  grpc::Status s = c.jobs().SubmitJob(Ctx().get(), request, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
}

TEST_F(JobServiceOfTwoWorkersTest,
       ShardsMatchTheSamplerAndMetricsAreAggregated) {
  v1::JobSpec spec = c.Spec(2);
  spec.set_epochs(4);
  v1::Job job = c.Submit(spec);
  v1::Assignment a0 = w0.AwaitAssignment();
  v1::Assignment a1 = w1.AwaitAssignment();
  EXPECT_EQ(a0.rank() + a1.rank(), 1);
  EXPECT_EQ(a0.train_samples(), 10);

  for (SimWorker* w : {&w0, &w1}) {
    const v1::Assignment& a = *w->task();
    v1::GetShardRequest request;
    request.mutable_task()->set_worker_id(w->id());
    request.mutable_task()->set_job_id(job.id());
    request.mutable_task()->set_attempt(a.attempt());
    request.mutable_task()->set_rank(a.rank());
    request.set_epoch(3);
    v1::GetShardResponse shard;
    ASSERT_TRUE(c.workers().GetShard(w->Context().get(), request, &shard).ok());
    SamplerOptions o;
    o.dataset_size = 10;
    o.world_size = 2;
    o.rank = a.rank();
    o.epoch = 3;
    auto want = DistributedSamplerIndices(o);
    EXPECT_EQ(
        std::vector<int64_t>(shard.indices().begin(), shard.indices().end()),
        *want);
    request.set_split(v1::SHARD_SPLIT_EVAL);
    ASSERT_TRUE(c.workers().GetShard(w->Context().get(), request, &shard).ok());
    EXPECT_EQ(shard.indices_size(), 3);  // 6 eval samples / 2, no padding
  }

  // Each rank reports its own steps; rank 0 also the evaluation.
  for (SimWorker* w : {&w0, &w1}) {
    const int rank = w->task()->rank();
    v1::ReportMetricsRequest report;
    report.mutable_task()->set_worker_id(w->id());
    report.mutable_task()->set_job_id(job.id());
    report.mutable_task()->set_attempt(w->task()->attempt());
    for (int step = 1; step <= 4; ++step) {
      v1::StepMetrics* m = report.add_steps();
      m->set_rank(rank);
      m->set_step(step);
      m->set_step_ms(rank == 1 ? 50 : 10);
      m->set_compute_ms(rank == 1 ? 45 : 8);
      m->set_samples_per_sec(10);
    }
    if (rank == 0) report.add_eval()->set_accuracy(0.75);
    v1::ReportMetricsResponse ignored;
    ASSERT_TRUE(
        c.workers().ReportMetrics(w->Context().get(), report, &ignored).ok());
  }
  v1::Job now = c.Get(job.id());
  EXPECT_EQ(now.metrics().slowest_rank(), 1);
  EXPECT_EQ(now.metrics().bounding_phase(), v1::PHASE_COMPUTE);
  EXPECT_DOUBLE_EQ(now.metrics().ranks(1).p50_step_ms(), 50);
  EXPECT_DOUBLE_EQ(now.metrics().samples_per_sec(), 20);
  ASSERT_EQ(now.metrics().eval_size(), 1);
}

// Finding (issue 39): without --state-dir, snapshots went to a predictable
// /tmp/gradsync-snapshots-<pid>-0, where another user could plant an index
// and a snapshot that `model pull` then served. Now the directory is fresh
// and private, and a state directory every user can write is refused.
TEST(ServerTest, SnapshotAndStateDirectoriesArePrivate) {
  {
    ServerOptions options;
    options.address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
        CoordinatorServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    // Snapshots and model files in one private scratch directory.
    const std::string snapshots = (*server)->snapshots().dir();
    const std::string dir = snapshots.substr(0, snapshots.rfind('/'));
    EXPECT_EQ(dir.find("/gradsync-coordinator-"), dir.rfind('/')) << dir;
    struct stat st;
    ASSERT_EQ(stat(dir.c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    const std::string model_files = dir + "/model-files";
    ASSERT_EQ(stat(model_files.c_str(), &st), 0) << model_files;
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  const std::string state = UniqueTempDir("open-state");
  std::filesystem::create_directories(state);
  std::filesystem::permissions(state, std::filesystem::perms::all);  // 0777
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.state_dir = state;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> refused =
      CoordinatorServer::Start(options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("is writable by every user"),
            std::string::npos)
      << refused.status();
  // A state directory it creates is private.
  const std::string fresh = state + "-fresh";
  options.state_dir = fresh;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> started =
      CoordinatorServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  struct stat st;
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  started->reset();
  std::filesystem::remove_all(state);
  std::filesystem::remove_all(fresh);
}

TEST(JobServiceTest, JobsSurviveACoordinatorRestart) {
  const std::string state = UniqueTempDir("state");
  std::string done_id, pending_id;
  {
    TestCluster c(absl::Seconds(30), state);
    SimWorker w(c.workers(), "host-a");
    v1::Job job = c.Submit(c.Spec(1));
    done_id = job.id();
    w.AwaitAssignment();
    v1::ReportMetricsRequest report;
    report.mutable_task()->set_worker_id(w.id());
    report.mutable_task()->set_job_id(job.id());
    report.mutable_task()->set_attempt(1);
    report.add_eval()->set_accuracy(0.875);
    v1::ReportMetricsResponse ignored;
    ASSERT_TRUE(
        c.workers().ReportMetrics(w.Context().get(), report, &ignored).ok());
    ASSERT_TRUE(w.Complete(true).ok());
    EXPECT_EQ(c.Get(done_id).state(), v1::JOB_STATE_SUCCEEDED);
    pending_id = c.Submit(c.Spec(3)).id();  // cannot start: one worker
  }
  TestCluster restarted(absl::Seconds(30), state);
  v1::ListJobsResponse list;
  ASSERT_TRUE(restarted.jobs().ListJobs(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.jobs_size(), 2);
  EXPECT_EQ(list.jobs(0).id(), pending_id);  // newest first
  v1::Job done = restarted.Get(done_id);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.transitions_size(),
            4);  // PENDING RENDEZVOUS RUNNING SUCCEEDED
  ASSERT_EQ(done.metrics().eval_size(), 1);
  EXPECT_DOUBLE_EQ(done.metrics().eval(0).accuracy(), 0.875);
  EXPECT_EQ(restarted.Get(pending_id).state(), v1::JOB_STATE_PENDING);
  // New ids continue after the restored ones.
  EXPECT_EQ(restarted.Submit(restarted.Spec(1)).id(), "job-000003");
  restarted.Stop();
  std::filesystem::remove_all(state);
}

TEST(JobServiceTest, WatchStreamsStateChangesAndMetrics) {
  TestCluster c;
  SimWorker w(c.workers(), "host-a");
  v1::Job job = c.Submit(c.Spec(1));
  v1::WatchJobRequest request;
  request.set_job_id(job.id());
  auto ctx = Ctx(30);
  auto reader = c.jobs().WatchJob(ctx.get(), request);
  // The first event is the snapshot: once it arrived, the watch is
  // subscribed and sees every later event.
  v1::JobEvent event;
  ASSERT_TRUE(reader->Read(&event));
  ASSERT_TRUE(event.has_job());
  v1::Assignment a = w.AwaitAssignment();
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(w.id());
  report.mutable_task()->set_job_id(job.id());
  report.mutable_task()->set_attempt(a.attempt());
  report.add_steps()->set_step(1);
  v1::ReportMetricsResponse ignored;
  ASSERT_TRUE(
      c.workers().ReportMetrics(w.Context().get(), report, &ignored).ok());
  ASSERT_TRUE(w.Complete(true).ok());

  std::vector<v1::JobState> states;
  int steps = 0;
  while (reader->Read(&event)) {
    if (event.has_job()) states.push_back(event.job().state());
    if (event.has_step()) ++steps;
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(steps, 1);
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_NE(std::find(states.begin(), states.end(), v1::JOB_STATE_RUNNING),
            states.end());
}

}  // namespace
}  // namespace gradsync::testing

namespace gradsync::testing {
namespace {

TEST(LimitsTest, ActiveJobsAndWorkersAreBounded) {
  const std::string dir = UniqueTempDir("limits");
  MakeImageFolder(dir, 2, 1);
  CoordinatorOptions options;
  options.run_failure_detector = false;
  options.max_active_jobs = 2;
  options.max_workers = 1;
  auto c = Coordinator::Create(options, nullptr);
  ASSERT_TRUE(c.ok()) << c.status();
  v1::JobSpec spec;
  spec.mutable_dataset()->set_path(dir);
  spec.set_model("mlp");
  spec.set_batch_size(1);
  spec.mutable_world_size()->set_max_workers(1);
  auto first = (*c)->SubmitJob(spec);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE((*c)->SubmitJob(spec).ok());
  auto third = (*c)->SubmitJob(spec);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("at most 2 (--max-active-jobs)"),
            std::string::npos)
      << third.status();
  // An ended job frees its place.
  ASSERT_TRUE((*c)->CancelJob(first->id(), "").ok());
  EXPECT_TRUE((*c)->SubmitJob(spec).ok());

  v1::RegisterWorkerRequest reg;
  reg.set_host("host-a");
  ASSERT_TRUE((*c)->RegisterWorker(reg).ok());
  EXPECT_EQ((*c)->RegisterWorker(reg).status().code(),
            absl::StatusCode::kResourceExhausted);
  std::filesystem::remove_all(dir);
}

// Finding: unbounded state. What a worker registers is bounded (host and
// device strings, device and port counts), as are its attempt's store and
// barriers (MemoryStoreTest, BarrierTest) and one report's records.
TEST(LimitsTest, WhatAWorkerSendsIsBounded) {
  CoordinatorOptions options;
  options.run_failure_detector = false;
  auto c = Coordinator::Create(options, nullptr);
  ASSERT_TRUE(c.ok()) << c.status();
  v1::RegisterWorkerRequest reg;
  reg.set_host(std::string(300, 'h'));
  absl::Status s = (*c)->RegisterWorker(reg).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("host is 300 bytes long"), std::string::npos) << s;
  reg.set_host("host-a");
  reg.add_devices()->set_name(std::string(1000, 'g'));
  EXPECT_EQ((*c)->RegisterWorker(reg).status().code(),
            absl::StatusCode::kInvalidArgument);
  reg.clear_devices();
  for (int i = 0; i < 300; ++i) reg.add_devices()->set_kind("cuda");
  EXPECT_EQ((*c)->RegisterWorker(reg).status().code(),
            absl::StatusCode::kInvalidArgument);
  reg.clear_devices();
  for (int i = 0; i < 2000; ++i) reg.add_free_ports(30000 + i % 100);
  EXPECT_EQ((*c)->RegisterWorker(reg).status().code(),
            absl::StatusCode::kInvalidArgument);
  reg.clear_free_ports();
  EXPECT_TRUE((*c)->RegisterWorker(reg).ok());
}

}  // namespace
}  // namespace gradsync::testing
