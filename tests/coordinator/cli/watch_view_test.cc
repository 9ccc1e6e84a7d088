#include "coordinator/cli/watch_view.h"

#include <gtest/gtest.h>

#include "coordinator/cli/format.h"

namespace gradsync::cli {
namespace {

TEST(FormatTest, ProgressBarAndDuration) {
  EXPECT_EQ(ProgressBar(0.5, 4), "[##..]");
  EXPECT_EQ(ProgressBar(2.0, 2), "[##]");
  EXPECT_EQ(FormatDuration(3500), "3s");
  EXPECT_EQ(FormatDuration(245000), "4m05s");
  EXPECT_EQ(FormatDuration(7800000), "2h10m");
}

TEST(WatchViewTest, ShowsRanksSlowestAndPhase) {
  WatchView view;
  v1::JobEvent first;
  v1::Job* job = first.mutable_job();
  job->set_id("job-000001");
  job->set_state(v1::JOB_STATE_RUNNING);
  job->set_message("all 2 rank(s) joined");
  job->mutable_spec()->set_epochs(2);
  job->add_transitions();
  std::vector<std::string> log = view.Apply(first);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("RUNNING"), std::string::npos);

  v1::JobEvent step;
  step.mutable_step()->set_rank(1);
  v1::JobMetrics* m = step.mutable_summary();
  for (int r = 0; r < 2; ++r) {
    v1::RankMetrics* rm = m->add_ranks();
    rm->set_rank(r);
    rm->mutable_last()->set_epoch(1);
    rm->mutable_last()->set_step(15);
    rm->mutable_last()->set_steps_per_epoch(10);
    rm->mutable_last()->set_loss(0.25);
    rm->set_p50_step_ms(r == 1 ? 40 : 20);
  }
  m->set_slowest_rank(1);
  m->set_bounding_phase(v1::PHASE_ALLREDUCE);
  EXPECT_TRUE(view.Apply(step).empty());
  std::vector<std::string> block = view.Block();
  ASSERT_EQ(block.size(), 4u);  // header, 2 ranks, footer
  EXPECT_NE(block[1].find("epoch 2/2 step 5/10"), std::string::npos)
      << block[1];
  EXPECT_NE(block[1].find("75%"), std::string::npos) << block[1];
  EXPECT_NE(block[3].find("slowest rank 1"), std::string::npos) << block[3];
  EXPECT_NE(block[3].find("all-reduce"), std::string::npos) << block[3];

  v1::JobEvent eval;
  eval.mutable_eval()->set_epoch(0);
  eval.mutable_eval()->set_accuracy(0.9012);
  log = view.Apply(eval);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("90.12%"), std::string::npos) << log[0];
}

}  // namespace
}  // namespace gradsync::cli
