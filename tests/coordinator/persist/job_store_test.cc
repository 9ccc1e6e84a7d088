#include "coordinator/persist/job_store.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gradsync
