// Abridged jobs (job_views.h) and ListJobs pages bounded by bytes: a page
// ends before max_list_page_bytes, and paging still lists every job once.
#include "coordinator/control/job_views.h"

#include <gtest/gtest.h>

#include <set>

#include "coordinator/control/coordinator.h"
#include "coordinator/control/job_spec.h"

namespace gradsync {
namespace {

TEST(JobViewsTest, AbridgedKeepsTheNewestHistoryAndSaysSo) {
  v1::Job job;
  job.set_id("job-000001");
  for (int i = 0; i < 10; ++i) {
    job.add_transitions()->set_time_unix_ms(i);
    job.add_attempts()->set_attempt(i + 1);
    job.add_ledger()->set_epoch(i);
  }
  const v1::Job short_job = Abridged(job);
  EXPECT_TRUE(short_job.abridged());
  EXPECT_EQ(short_job.id(), "job-000001");
  EXPECT_EQ(short_job.ledger_size(), 0);
  ASSERT_EQ(short_job.transitions_size(), kAbridgedTransitions);
  EXPECT_EQ(short_job.transitions(0).time_unix_ms(), 10 - kAbridgedTransitions);
  EXPECT_EQ(short_job.transitions().rbegin()->time_unix_ms(), 9);
  ASSERT_EQ(short_job.attempts_size(), kAbridgedAttempts);
  EXPECT_EQ(short_job.attempts().rbegin()->attempt(), 10);
  // Short histories stay whole.
  v1::Job fresh;
  fresh.add_transitions();
  EXPECT_EQ(Abridged(fresh).transitions_size(), 1);
}

TEST(JobViewsTest, ListPagesEndBeforeTheirByteLimit) {
  CoordinatorOptions options;
  options.run_failure_detector = false;
  options.max_list_page_bytes = 2000;
  auto coordinator = Coordinator::Create(options, nullptr);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  constexpr int kJobs = 30;
  for (int i = 0; i < kJobs; ++i) {
    v1::JobSpec spec;
    spec.set_name("job-with-a-longish-name-" + std::string(100, 'n'));
    spec.mutable_dataset()->set_path("synthetic:tiny");
    spec.set_model("mlp");
    spec.set_batch_size(8);
    spec.mutable_world_size()->set_max_workers(1);
    ApplyJobSpecDefaults(&spec);
    absl::StatusOr<v1::Job> job = (*coordinator)->SubmitJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
  }
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<Coordinator::JobPage> page =
        (*coordinator)->ListJobs(0, token);
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_FALSE(page->jobs.empty());
    size_t bytes = 0;
    for (const v1::Job& job : page->jobs) {
      bytes += job.ByteSizeLong();
      EXPECT_TRUE(seen.insert(job.id()).second) << job.id() << " twice";
    }
    if (page->jobs.size() > 1) {
      EXPECT_LE(bytes, options.max_list_page_bytes);
    }
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 100);
  EXPECT_EQ(seen.size(), size_t{kJobs});
  EXPECT_GT(pages, 2);
}

}  // namespace
}  // namespace gradsync
