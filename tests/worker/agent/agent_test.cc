// Real agents (the worker process's loop, each on a thread) against an
// in-process coordinator: they register (their health files say so), run a
// 2-rank job on a small image folder through the coordinator's store, gloo
// and the trainer, report metrics and evaluations, complete, and go back to
// idle; Stop() ends Run().
#include "worker/agent/agent.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/client/channel.h"
#include "tests/fakes/test_cluster.h"
#include "worker/agent/health_file.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

// <dir>/{train,test}/class<c>/<i>.png: 28x28 grayscale, 2 classes.
void MakePngFolder(const fs::path& dir, int train, int test) {
  std::mt19937 gen(5);
  for (int c = 0; c < 2; ++c) {
    for (auto [split, n] :
         {std::pair<const char*, int>{"train", train}, {"test", test}}) {
      const fs::path d = dir / split / ("class" + std::to_string(c));
      fs::create_directories(d);
      for (int i = 0; i < n; ++i) {
        cv::Mat image(28, 28, CV_8UC1);
        for (int p = 0; p < 28 * 28; ++p) {
          image.data[p] = static_cast<uint8_t>(gen() % 100 + 100 * c);
        }
        ASSERT_TRUE(cv::imwrite((d / absl::StrCat(i, ".png")).string(), image));
      }
    }
  }
}

// Waits until `file` was written within the last seconds; its contents.
absl::StatusOr<std::string> AwaitHealth(const std::string& file,
                                        const std::string& state) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  absl::StatusOr<std::string> health = absl::NotFoundError(file);
  while (absl::Now() < deadline) {
    health = CheckWorkerHealth(file, absl::Seconds(10));
    if (health.ok() && health->find("(" + state + ")") != std::string::npos) {
      return health;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return health;
}

// A 2-rank job training the small `mlp` on the folder at `data`.
v1::JobSpec MlpSpec(const testing::TestCluster& cluster, const fs::path& data,
                    int batch_size) {
  v1::JobSpec spec = cluster.Spec(2);
  spec.mutable_dataset()->set_path(data.string());
  spec.set_model("mlp");
  spec.set_batch_size(batch_size);
  return spec;
}

// Two agents on threads against `cluster`, their health files in `dir`;
// `options` are theirs (host, health file and log interval set here). Stop()
// ends them and checks that Run() returned OK.
class TwoAgents {
 public:
  TwoAgents(const testing::TestCluster& cluster, const fs::path& dir,
            AgentOptions options = {}) {
    for (int i = 0; i < 2; ++i) {
      AgentOptions o = options;
      o.host = "127.0.0.1";
      o.log_every = 0;
      o.health_file = (dir / absl::StrCat("health-", i)).string();
      health_.push_back(o.health_file);
      agents_.push_back(std::make_unique<Agent>(
          v1::WorkerService::NewStub(
              MakeCoordinatorChannel(cluster.address(), /*token=*/"")),
          o));
    }
    for (int i = 0; i < 2; ++i) {
      threads_.emplace_back([this, i] { ran_[i] = agents_[i]->Run(); });
    }
  }

  // Both health files say "idle" (fails the test otherwise).
  void ExpectIdle() const {
    for (const std::string& file : health_) {
      absl::StatusOr<std::string> h = AwaitHealth(file, "idle");
      EXPECT_TRUE(h.ok()) << h.status();
    }
  }

  void Stop() {
    for (auto& agent : agents_) agent->Stop();
    for (std::thread& t : threads_) t.join();
    for (const absl::Status& s : ran_) EXPECT_TRUE(s.ok()) << s;
  }

  // Waits for both Run()s to return by themselves (agents that live for
  // one job); what they returned.
  std::vector<absl::Status> Join() {
    for (std::thread& t : threads_) t.join();
    return {ran_[0], ran_[1]};
  }

 private:
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<std::thread> threads_;
  absl::Status ran_[2];
  std::vector<std::string> health_;
};

// A coordinator, and a folder for the test's data and health files.
// The agents' scratch directories go to dir/tmp (TMPDIR), where a test can
// see what they left.
class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir / "tmp");
    const char* tmp = std::getenv("TMPDIR");
    if (tmp != nullptr) saved_tmpdir_ = tmp;
    setenv("TMPDIR", (dir / "tmp").c_str(), 1);
  }
  void TearDown() override {
    if (saved_tmpdir_) {
      setenv("TMPDIR", saved_tmpdir_->c_str(), 1);
    } else {
      unsetenv("TMPDIR");
    }
    fs::remove_all(dir);
  }

  testing::TestCluster cluster;
  const fs::path dir = testing::UniqueTempDir("agent-test");

 private:
  std::optional<std::string> saved_tmpdir_;
};

TEST_F(AgentTest, TwoAgentsTrainAJobAndReturnToIdle) {
  MakePngFolder(dir / "data", 8, 4);
  TwoAgents agents(cluster, dir);
  agents.ExpectIdle();

  v1::JobSpec spec = MlpSpec(cluster, dir / "data", 4);
  spec.set_epochs(2);
  const v1::Job submitted = cluster.Submit(spec);
  const v1::Job done =
      cluster.WaitForState(submitted.id(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.message();
  const v1::Job job = cluster.Get(submitted.id());
  EXPECT_EQ(job.world_size(), 2);
  ASSERT_EQ(job.metrics().ranks_size(), 2);
  for (const v1::RankMetrics& r : job.metrics().ranks()) {
    // 16 samples over 2 ranks in batches of 4: 2 steps an epoch.
    EXPECT_EQ(r.last().step(), 4) << "rank " << r.rank();
  }
  ASSERT_EQ(job.metrics().eval_size(), 2);
  EXPECT_EQ(job.metrics().eval(1).samples(), 8);  // every test sample once

  // No checkpoint directory, yet the coordinator keeps the final weights
  // (issue: such a job kept no model and `model pull` failed), and the
  // scratch copy rank 0 uploaded them from is gone.
  v1::ListSnapshotsRequest list;
  list.set_job_id(job.id());
  v1::ListSnapshotsResponse snapshots;
  ASSERT_TRUE(cluster.jobs()
                  .ListSnapshots(testing::Ctx().get(), list, &snapshots)
                  .ok());
  ASSERT_EQ(snapshots.snapshots_size(), 1);
  EXPECT_EQ(snapshots.snapshots(0).step(), 4);
  EXPECT_GT(snapshots.snapshots(0).size_bytes(), 0);
  for (const auto& entry : fs::directory_iterator(dir / "tmp")) {
    ADD_FAILURE() << "left behind: " << entry.path();
  }

  agents.ExpectIdle();
  agents.Stop();
  // The agents ran the task with torchrun's names but never setenv'd them
  // (that races every other thread's getenv).
  for (const char* name :
       {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
    EXPECT_EQ(std::getenv(name), nullptr) << name;
  }
}

// A synthetic data set through the coordinator (issue: `gradsync submit
// --dataset synthetic:tiny` was a path the coordinator could not scan). It
// needs no file and no data root: the workers have roots, the data set is
// in none of them.
TEST_F(AgentTest, TwoAgentsTrainASyntheticDataSet) {
  fs::create_directories(dir / "roots");
  AgentOptions options;
  options.dataset_access.data_roots = {(dir / "roots").string()};
  TwoAgents agents(cluster, dir, options);
  agents.ExpectIdle();

  v1::JobSpec spec = cluster.Spec(2);
  spec.mutable_dataset()->set_path("synthetic:tiny");
  spec.set_model("mlp");
  spec.set_batch_size(64);
  const v1::Job submitted = cluster.Submit(spec);
  EXPECT_EQ(submitted.train_samples(), 512);
  EXPECT_EQ(submitted.eval_samples(), 128);
  const v1::Job done =
      cluster.WaitForState(submitted.id(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.message();
  const v1::Job job = cluster.Get(submitted.id());
  ASSERT_EQ(job.metrics().ranks_size(), 2);
  for (const v1::RankMetrics& r : job.metrics().ranks()) {
    // 512 samples over 2 ranks in batches of 64: 4 steps.
    EXPECT_EQ(r.last().step(), 4) << "rank " << r.rank();
  }
  ASSERT_EQ(job.metrics().eval_size(), 1);
  EXPECT_EQ(job.metrics().eval(0).samples(), 128);
  agents.ExpectIdle();
  agents.Stop();
}

// Finding: a failing task (there an exception) ended the worker process.
// Here every rank fails (its images exceed the worker's pixel limit): the
// job fails naming the file, and both agents are idle and running again.
TEST_F(AgentTest, AFailedTaskLeavesTheAgentIdleAndRunning) {
  MakePngFolder(dir / "data", 4, 2);
  AgentOptions options;
  options.dataset_access.decode.max_pixels = 100;  // the images are 28x28
  options.checkpoint_root = dir.string();
  TwoAgents agents(cluster, dir, options);
  v1::JobSpec spec = MlpSpec(cluster, dir / "data", 2);
  spec.set_max_restarts(0);
  const v1::Job submitted = cluster.Submit(spec);
  const v1::Job failed =
      cluster.WaitForState(submitted.id(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(failed.message().find("more than the limit of 100"),
            std::string::npos)
      << failed.message();
  agents.ExpectIdle();
  // Finding: checkpoint paths were unconfined on workers (resume_from read
  // any file on rank 0's host). A path outside every worker's checkpoint
  // root is refused at submit (the workers registered their roots); one
  // that a link inside the root leads out of fails the task on the worker,
  // naming the field.
  spec.mutable_checkpoint()->set_resume_from("/etc/passwd");
  {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    v1::Job ignored;
    EXPECT_EQ(cluster.job_stub()
                  ->SubmitJob(testing::Ctx().get(), request, &ignored)
                  .error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  std::filesystem::create_directory_symlink("/etc", dir / "link-out");
  const std::string through_link = (dir / "link-out" / "passwd").string();
  spec.mutable_checkpoint()->set_resume_from(through_link);
  const v1::Job outside =
      cluster.WaitForState(cluster.Submit(spec).id(), v1::JOB_STATE_FAILED);
  EXPECT_NE(outside.message().find("checkpoint.resume_from " + through_link),
            std::string::npos)
      << outside.message();
  EXPECT_NE(outside.message().find("outside the worker's checkpoint root"),
            std::string::npos)
      << outside.message();
  agents.ExpectIdle();
  agents.Stop();
}

// gradsync-worker --exit-after-job: both agents run the job, then leave
// Run() by themselves, OK because it SUCCEEDED (the worker exits 0); a job
// submitted after it is not theirs.
TEST_F(AgentTest, AgentsThatLiveForOneJobReturnWhenItSucceeds) {
  MakePngFolder(dir / "data", 4, 2);
  v1::JobSpec spec = MlpSpec(cluster, dir / "data", 2);
  const v1::Job job = cluster.Submit(spec);
  AgentOptions options;
  options.exit_after_job = true;
  TwoAgents agents(cluster, dir, options);
  EXPECT_EQ(cluster.WaitForState(job.id(), v1::JOB_STATE_SUCCEEDED).state(),
            v1::JOB_STATE_SUCCEEDED);
  const v1::Job next = cluster.Submit(spec);
  for (const absl::Status& s : agents.Join()) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(cluster.Get(next.id()).state(), v1::JOB_STATE_PENDING);
}

// gradsync-worker --job JOB when JOB fails: Run() returns ABORTED naming the
// state and the reason (the worker exits 1).
TEST_F(AgentTest, AgentsForAFailedJobReturnItsReason) {
  MakePngFolder(dir / "data", 4, 2);
  v1::JobSpec spec = MlpSpec(cluster, dir / "data", 2);
  spec.set_max_restarts(0);
  const v1::Job job = cluster.Submit(spec);
  AgentOptions options;
  options.job_id = job.id();
  options.dataset_access.decode.max_pixels = 100;  // the images are 28x28
  TwoAgents agents(cluster, dir, options);
  for (const absl::Status& s : agents.Join()) {
    EXPECT_TRUE(absl::IsAborted(s)) << s;
    EXPECT_NE(s.message().find("FAILED"), std::string::npos) << s;
    EXPECT_NE(s.message().find("more than the limit of 100"), std::string::npos)
        << s;
  }
}

// A worker that lives for one job and is never assigned one gives up after
// its idle timeout; one for a job the coordinator does not have, at once.
TEST_F(AgentTest, AnUnassignedOneJobAgentGivesUp) {
  AgentOptions options;
  options.host = "127.0.0.1";
  options.exit_after_job = true;
  options.idle_timeout = absl::Seconds(2);
  Agent idle(v1::WorkerService::NewStub(
                 MakeCoordinatorChannel(cluster.address(), /*token=*/"")),
             options);
  const absl::Status timed_out = idle.Run();
  EXPECT_TRUE(absl::IsDeadlineExceeded(timed_out)) << timed_out;
  EXPECT_NE(timed_out.message().find("--idle-timeout"), std::string::npos);

  options.job_id = "job-424242";
  Agent unknown(v1::WorkerService::NewStub(
                    MakeCoordinatorChannel(cluster.address(), /*token=*/"")),
                options);
  const absl::Status not_found = unknown.Run();
  EXPECT_TRUE(absl::IsNotFound(not_found)) << not_found;
  EXPECT_NE(not_found.message().find("job-424242"), std::string::npos);
}

}  // namespace
}  // namespace gradsync
