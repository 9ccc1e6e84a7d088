// Finished jobs and the job store (issue 17, findings 9 and 11): ListJobs
// pages, finished jobs are deleted by retention or `DeleteJob`, the active
// job limit is checked before a data set is scanned, and the job store is
// written outside the coordinator's lock, its failures surfaced and
// retried.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <map>
#include <set>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "coordinator/control/coordinator.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

// A JobStore in memory whose writes can be made to fail or to block.
class FakeJobStore : public JobStore {
 public:
  absl::Status Save(const v1::Job& job) override {
    if (block_ != nullptr) block_->WaitForNotification();
    absl::MutexLock lock(&mu_);
    if (failures_left_ > 0) {
      --failures_left_;
      return absl::UnavailableError("disk is full (fake)");
    }
    jobs_[job.id()] = job;
    return absl::OkStatus();
  }
  absl::Status Delete(const std::string& job_id) override {
    absl::MutexLock lock(&mu_);
    jobs_.erase(job_id);
    deleted_.insert(job_id);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<v1::Job>> LoadAll() override {
    return std::vector<v1::Job>();
  }
  absl::Status SaveTrail(const std::string&, const v1::JobTrail&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::map<std::string, v1::JobTrail>> LoadTrails() override {
    return std::map<std::string, v1::JobTrail>();
  }
  absl::Status SaveWorkerKey(const std::string&, const std::string&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::map<std::string, std::string>> LoadWorkerKeys() override {
    return std::map<std::string, std::string>();
  }

  void FailNext(int n) {
    absl::MutexLock lock(&mu_);
    failures_left_ = n;
  }
  // Saves wait for `gate` (set before the coordinator uses the store).
  void BlockOn(absl::Notification* gate) { block_ = gate; }
  bool Has(const std::string& id) {
    absl::MutexLock lock(&mu_);
    return jobs_.count(id) > 0;
  }
  bool WasDeleted(const std::string& id) {
    absl::MutexLock lock(&mu_);
    return deleted_.count(id) > 0;
  }

 private:
  absl::Notification* block_ = nullptr;
  absl::Mutex mu_;
  int failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, v1::Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> deleted_ ABSL_GUARDED_BY(mu_);
};

// Polls `done` for up to 30 s (a deadline against hangs, not a speed goal).
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return done();
}

class JobRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dataset_ = UniqueTempDir("retention");
    MakeImageFolder(dataset_, 2, 1);
    options_.run_failure_detector = false;
    options_.on_job_deleted = [this](const std::string& id) {
      deleted_.push_back(id);
    };
  }
  void TearDown() override {
    coordinator_.reset();
    std::filesystem::remove_all(dataset_);
  }
  void Start(std::unique_ptr<JobStore> store = nullptr) {
    auto c = Coordinator::Create(options_, std::move(store));
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
  }
  v1::JobSpec Spec() const {
    v1::JobSpec spec;
    spec.set_name("test");
    spec.mutable_dataset()->set_path(dataset_);
    spec.set_model("fashion_cnn");
    spec.set_batch_size(2);
    spec.mutable_world_size()->set_max_workers(1);
    return spec;
  }
  // Submits a job and cancels it: a finished job.
  std::string Finished() {
    absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(Spec());
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(coordinator_->CancelJob(job->id(), "").ok());
    return job->id();
  }
  std::vector<std::string> Page(int size, std::string* token) {
    absl::StatusOr<Coordinator::JobPage> page =
        coordinator_->ListJobs(size, *token);
    EXPECT_TRUE(page.ok()) << page.status();
    std::vector<std::string> ids;
    for (const v1::Job& j : page->jobs) ids.push_back(j.id());
    *token = page->next_page_token;
    return ids;
  }

  std::string dataset_;
  CoordinatorOptions options_;
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<std::string> deleted_;  // by on_job_deleted
};

TEST_F(JobRetentionTest, ListJobsPagesNewestFirst) {
  Start();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Finished());
  std::string token;
  EXPECT_EQ(Page(2, &token), (std::vector<std::string>{ids[4], ids[3]}));
  ASSERT_EQ(token, ids[3]);
  // A job deleted between pages does not shift the next one.
  ASSERT_TRUE(coordinator_->DeleteJob(ids[2]).ok());
  EXPECT_EQ(Page(2, &token), (std::vector<std::string>{ids[1], ids[0]}));
  EXPECT_TRUE(token.empty() ||
              Page(2, &token).empty());  // nothing after the oldest
  token.clear();
  EXPECT_EQ(Page(0, &token).size(), 4u);  // 0 = the default page size
  EXPECT_TRUE(token.empty());

  EXPECT_EQ(coordinator_->ListJobs(-1, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status bad = coordinator_->ListJobs(2, "job-x").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("page_token"), std::string::npos) << bad;
}

TEST_F(JobRetentionTest, FinishedJobsBeyondTheCountAreDeletedOldestFirst) {
  options_.max_finished_jobs = 2;
  Start();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Finished());
  absl::StatusOr<v1::Job> pending = coordinator_->SubmitJob(Spec());
  ASSERT_TRUE(pending.ok());
  coordinator_->SweepDeadWorkers(absl::Now());
  EXPECT_EQ(deleted_, (std::vector<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(coordinator_->GetJob(ids[0]).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(coordinator_->GetJob(ids[3]).ok());
  EXPECT_TRUE(coordinator_->GetJob(pending->id()).ok());  // never a live one
}

TEST_F(JobRetentionTest, FinishedJobsOlderThanTheAgeAreDeleted) {
  options_.finished_job_ttl = absl::Hours(1);
  Start();
  const std::string old = Finished();
  coordinator_->SweepDeadWorkers(absl::Now());
  EXPECT_TRUE(coordinator_->GetJob(old).ok());
  coordinator_->SweepDeadWorkers(absl::Now() + absl::Hours(2));
  EXPECT_EQ(coordinator_->GetJob(old).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(deleted_, (std::vector<std::string>{old}));
}

TEST_F(JobRetentionTest, DeleteJobForgetsOnlyFinishedJobs) {
  auto store = std::make_unique<FakeJobStore>();
  FakeJobStore* fake = store.get();
  Start(std::move(store));
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(Spec());
  ASSERT_TRUE(job.ok());
  absl::Status s = coordinator_->DeleteJob(job->id());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("cancel it first"), std::string::npos) << s;
  ASSERT_TRUE(coordinator_->CancelJob(job->id(), "").ok());
  ASSERT_TRUE(coordinator_->DeleteJob(job->id()).ok());
  EXPECT_EQ(coordinator_->GetJob(job->id()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(coordinator_->DeleteJob(job->id()).code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(Eventually([&] { return fake->WasDeleted(job->id()); }));
  EXPECT_FALSE(fake->Has(job->id()));
}

TEST_F(JobRetentionTest, TheActiveJobLimitIsCheckedBeforeTheScan) {
  options_.max_active_jobs = 1;
  Start();
  ASSERT_TRUE(coordinator_->SubmitJob(Spec()).ok());
  v1::JobSpec missing = Spec();
  missing.mutable_dataset()->set_path(dataset_ + "/no-such-folder");
  absl::Status s = coordinator_->SubmitJob(missing).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
}

TEST_F(JobRetentionTest, TheStoreIsWrittenOutsideTheCoordinatorLock) {
  absl::Notification gate;
  auto store = std::make_unique<FakeJobStore>();
  FakeJobStore* fake = store.get();
  fake->BlockOn(&gate);
  Start(std::move(store));
  // The store hangs on its first write; the coordinator must not.
  auto submitted = std::async(std::launch::async,
                              [&] { return coordinator_->SubmitJob(Spec()); });
  ASSERT_EQ(submitted.wait_for(std::chrono::seconds(30)),
            std::future_status::ready)
      << "SubmitJob waited for the job store";
  absl::StatusOr<v1::Job> job = submitted.get();
  ASSERT_TRUE(job.ok()) << job.status();
  auto read = std::async(std::launch::async,
                         [&] { return coordinator_->GetJob(job->id()); });
  ASSERT_EQ(read.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(read.get().ok());
  gate.Notify();
  EXPECT_TRUE(Eventually([&] { return fake->Has(job->id()); }));
}

TEST_F(JobRetentionTest, AFailedWriteIsSurfacedAndRetriedUntilItLands) {
  auto store = std::make_unique<FakeJobStore>();
  FakeJobStore* fake = store.get();
  fake->FailNext(2);
  Start(std::move(store));
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(Spec());
  ASSERT_TRUE(job.ok()) << job.status();
  // Surfaced on the job while it fails...
  EXPECT_TRUE(Eventually([&] {
    return !coordinator_->GetJob(job->id())->persist_error().empty();
  }));
  EXPECT_NE(coordinator_->GetJob(job->id())->persist_error().find("disk is "
                                                                  "full"),
            std::string::npos);
  // ...written once the store recovers, and cleared.
  EXPECT_TRUE(Eventually([&] { return fake->Has(job->id()); }));
  EXPECT_TRUE(Eventually([&] {
    return coordinator_->GetJob(job->id())->persist_error().empty();
  }));
  // Watchers saw both changes as events.
  absl::StatusOr<std::shared_ptr<EventLog>> log =
      coordinator_->JobEvents(job->id());
  ASSERT_TRUE(log.ok());
  int with_error = 0;
  for (const v1::JobEvent& e : (*log)->Read(0, absl::Now()).events) {
    if (e.has_job() && !e.job().persist_error().empty()) ++with_error;
  }
  EXPECT_GE(with_error, 1);
}

}  // namespace
}  // namespace gradsync::testing
