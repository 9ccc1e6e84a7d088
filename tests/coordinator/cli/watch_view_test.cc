#include "coordinator/cli/watch_view.h"

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(FormatTest, FitWidthCutsByCharactersNotBytes) {
  EXPECT_EQ(FitWidth("abcdef", 0), "abcdef");
  EXPECT_EQ(FitWidth("abcdef", 6), "abcdef");
  EXPECT_EQ(FitWidth("abcdefgh", 6), "abc...");
  EXPECT_EQ(FitWidth("\u00e9\u00e9\u00e9\u00e9\u00e9", 4), "\u00e9...");
  EXPECT_EQ(FitWidth("abcdef", 2), "..");
}

// A running job at 25% of 2 epochs, 60 s after it started.
v1::JobEvent RunningAtAQuarter() {
  v1::JobEvent event;
  v1::Job* job = event.mutable_job();
  job->set_id("job-000007");
  job->set_state(v1::JOB_STATE_RUNNING);
  job->mutable_spec()->set_name("a-job-with-a-rather-long-name-indeed");
  job->mutable_spec()->set_model("fashion_cnn");
  job->mutable_spec()->set_epochs(2);
  job->set_world_size(2);
  v1::Transition* t = job->add_transitions();
  t->set_to(v1::JOB_STATE_RUNNING);
  t->set_time_unix_ms(1000000);
  for (int r = 0; r < 2; ++r) {
    v1::RankMetrics* rm = job->mutable_metrics()->add_ranks();
    rm->set_rank(r);
    rm->mutable_last()->set_step(r == 0 ? 60 : 50);  // rank 1 is behind
    rm->mutable_last()->set_steps_per_epoch(100);
    rm->mutable_last()->set_samples_per_sec(123456);
  }
  job->mutable_metrics()->set_slowest_rank(1);
  return event;
}

TEST(WatchViewTest, BlockShowsElapsedAndEtaAndFitsTheTerminal) {
  WatchView view;
  view.Apply(RunningAtAQuarter());
  const std::vector<std::string> block = view.Block(1000000 + 60000, 80);
  ASSERT_GE(block.size(), 3u);
  // Rank 1 is 25% through: 60 s so far, 180 s to go.
  EXPECT_NE(block[0].find("1m00s elapsed, ETA 3m00s"), std::string::npos)
      << block[0];
  for (const std::string& line : block) EXPECT_LE(line.size(), 80u) << line;
  // Uncut, the lines are longer than that: the cut is what keeps a redraw
  // on an 80-column terminal from leaving wrapped rows behind.
  size_t longest = 0;
  for (const std::string& line : view.Block(1060000, 0)) {
    longest = std::max(longest, line.size());
  }
  EXPECT_GT(longest, 80u);
}

TEST(WatchViewTest, SummaryRepeatsTheResultAndTheNextStep) {
  WatchView view;
  EXPECT_TRUE(view.Summary().empty());
  v1::JobEvent done = RunningAtAQuarter();
  v1::Job* job = done.mutable_job();
  job->set_state(v1::JOB_STATE_SUCCEEDED);
  job->set_updated_unix_ms(1000000 + 245000);
  v1::EvalMetrics* e = job->mutable_metrics()->add_eval();
  e->set_epoch(1);
  e->set_accuracy(0.8871);
  e->set_loss(0.31);
  e->set_samples(10000);
  view.Apply(done);
  std::vector<std::string> summary = view.Summary();
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_EQ(summary[0],
            "job-000007 SUCCEEDED after 4m05s: test accuracy 88.71%, loss "
            "0.3100 (epoch 2 of 2, 10000 samples)");
  EXPECT_EQ(summary[1],
            "weights: gradsync model pull job-000007 --state-dict -o model.pt");

  job->set_state(v1::JOB_STATE_FAILED);
  job->mutable_metrics()->clear_eval();
  job->set_message("rank 1 failed");
  view.Apply(done);
  summary = view.Summary();
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_NE(summary[0].find("FAILED after 4m05s: rank 1 failed"),
            std::string::npos)
      << summary[0];
  EXPECT_NE(summary[1].find("gradsync logs job-000007"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::cli
