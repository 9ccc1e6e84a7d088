#include "coordinator/persist/job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

namespace gradsync {
namespace {

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gradsync_store_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(SqliteJobStoreTest, SavedJobsSurviveReopen) {
  const std::string dir = TempDir("reopen");
  {
    auto store = SqliteJobStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    v1::Job job;
    job.set_id("job-000001");
    job.set_state(v1::JOB_STATE_PENDING);
    job.mutable_spec()->set_name("first");
    v1::Transition* t = job.add_transitions();
    t->set_to(v1::JOB_STATE_PENDING);
    t->set_reason("submitted");
    ASSERT_TRUE((*store)->Save(job).ok());
    job.set_state(v1::JOB_STATE_SUCCEEDED);
    job.add_transitions()->set_reason("done");
    job.mutable_metrics()->add_eval()->set_accuracy(0.9);
    ASSERT_TRUE((*store)->Save(job).ok());
  }
  auto store = SqliteJobStore::Open(dir);
  ASSERT_TRUE(store.ok());
  auto jobs = (*store)->LoadAll();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ((*jobs)[0].transitions_size(), 2);
  EXPECT_DOUBLE_EQ((*jobs)[0].metrics().eval(0).accuracy(), 0.9);
  std::filesystem::remove_all(dir);
}

TEST(SqliteJobStoreTest, UnwritableDirectoryIsAnError) {
  auto store = SqliteJobStore::Open("/proc/gradsync-cannot-exist");
  EXPECT_FALSE(store.ok());
}

v1::Job Job(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_PENDING);
  job.add_transitions()->set_reason("submitted");
  return job;
}

std::vector<std::string> Ids(JobStore& store) {
  auto jobs = store.LoadAll();
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  std::vector<std::string> ids;
  for (const v1::Job& j : *jobs) ids.push_back(j.id());
  return ids;
}

// Where WAL is unavailable (some network and container file systems), a
// reader makes COMMIT fail with SQLITE_BUSY and leaves the transaction
// open; the store must roll it back so that the next save works.
TEST(SqliteJobStoreTest, AFailedCommitRollsBackAndTheNextSaveWorks) {
  const std::string dir = TempDir("busy");
  SqliteOptions options;
  options.journal_mode = "DELETE";
  options.busy_timeout_ms = 50;
  auto store = SqliteJobStore::Open(dir, options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Save(Job("job-000001")).ok());

  sqlite3* reader = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/gradsync.db").c_str(), &reader), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM jobs;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  absl::Status busy = (*store)->Save(Job("job-000002"));
  EXPECT_FALSE(busy.ok());
  ASSERT_EQ(sqlite3_exec(reader, "COMMIT;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(reader);

  absl::Status next = (*store)->Save(Job("job-000003"));
  EXPECT_TRUE(next.ok()) << next;
  EXPECT_EQ(Ids(**store),
            (std::vector<std::string>{"job-000001", "job-000003"}));
  std::filesystem::remove_all(dir);
}

TEST(SqliteJobStoreTest, DeleteRemovesTheRecord) {
  const std::string dir = TempDir("delete");
  auto store = SqliteJobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Save(Job("job-000001")).ok());
  ASSERT_TRUE((*store)->Save(Job("job-000002")).ok());
  ASSERT_TRUE((*store)->Delete("job-000001").ok());
  ASSERT_TRUE((*store)->Delete("job-000009").ok());  // unknown: nothing to do
  EXPECT_EQ(Ids(**store), (std::vector<std::string>{"job-000002"}));
  std::filesystem::remove_all(dir);
}

// A job's trail (curve, newest log lines) survives a reopen, a newer one
// replaces it, and deleting the job removes it.
TEST(SqliteJobStoreTest, TrailsSurviveAReopenAndGoWithTheirJob) {
  const std::string dir = TempDir("trails");
  {
    auto store = SqliteJobStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Save(Job("job-000001")).ok());
    v1::JobTrail trail;
    trail.add_train()->set_step(1);
    ASSERT_TRUE((*store)->SaveTrail("job-000001", trail).ok());
    trail.add_train()->set_step(2);
    trail.add_logs()->set_text("epoch 1: test accuracy 88.80%");
    (*trail.mutable_logs_dropped())[1] = 5;
    ASSERT_TRUE((*store)->SaveTrail("job-000001", trail).ok());
  }
  auto store = SqliteJobStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto trails = (*store)->LoadTrails();
  ASSERT_TRUE(trails.ok()) << trails.status();
  ASSERT_EQ(trails->count("job-000001"), 1u);
  const v1::JobTrail& t = trails->at("job-000001");
  EXPECT_EQ(t.train_size(), 2);
  EXPECT_EQ(t.logs(0).text(), "epoch 1: test accuracy 88.80%");
  EXPECT_EQ(t.logs_dropped().at(1), 5);
  ASSERT_TRUE((*store)->Delete("job-000001").ok());
  EXPECT_TRUE((*store)->LoadTrails()->empty());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradsync
