// StepDeadline: a watched piece of work that outlives the limit is reported
// once, naming it; work that ends in time, or a deadline without a limit,
// reports nothing.
#include "worker/train/step_deadline.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace gradsync {
namespace {

class Recorder {
 public:
  StepDeadline::OnOverrun Handler() {
    return [this](const absl::Status& s) {
      absl::MutexLock lock(&mu_);
      seen_.push_back(s);
      if (!fired_.HasBeenNotified()) fired_.Notify();
    };
  }
  // Waits (up to a minute) for the first report.
  bool WaitFired() {
    return fired_.WaitForNotificationWithTimeout(absl::Minutes(1));
  }
  std::vector<absl::Status> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  absl::Mutex mu_;
  std::vector<absl::Status> seen_ ABSL_GUARDED_BY(mu_);
  absl::Notification fired_;
};

TEST(StepDeadlineTest, WorkPastTheLimitIsReportedOnceNamingIt) {
  Recorder recorder;
  {
    StepDeadline deadline(absl::Milliseconds(20), recorder.Handler());
    StepDeadline::Scope scope = deadline.Watch("step 7 (forward)");
    // The work goes on past its deadline until the report has come.
    ASSERT_TRUE(recorder.WaitFired());
    absl::SleepFor(absl::Milliseconds(100));  // no second report comes
  }
  const std::vector<absl::Status> seen = recorder.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(seen[0].message(),
            "step deadline: step 7 (forward) ran longer than 20ms (the job's "
            "step_timeout_ms); a model that loops or stalls holds its worker");
}

TEST(StepDeadlineTest, WorkEndedInTimeIsNotReported) {
  Recorder recorder;
  {
    StepDeadline deadline(absl::Hours(1), recorder.Handler());
    for (int i = 0; i < 100; ++i) {
      StepDeadline::Scope scope = deadline.Watch("a step");
    }
  }
  EXPECT_TRUE(recorder.seen().empty());
}

TEST(StepDeadlineTest, OnlyTheWorkStillRunningIsReported) {
  Recorder recorder;
  {
    StepDeadline deadline(absl::Milliseconds(50), recorder.Handler());
    { StepDeadline::Scope first = deadline.Watch("step 1"); }
    StepDeadline::Scope second = deadline.Watch("step 2");
    ASSERT_TRUE(recorder.WaitFired());
  }
  const std::vector<absl::Status> seen = recorder.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].message().find("step 2 ran longer"), std::string::npos)
      << seen[0];
}

TEST(StepDeadlineTest, WithoutALimitNothingIsWatched) {
  Recorder recorder;
  {
    StepDeadline deadline(absl::ZeroDuration(), recorder.Handler());
    StepDeadline::Scope scope = deadline.Watch("a step");
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(recorder.seen().empty());
}

// The default handler ends the process with kStepOverrunExitCode, saying
// why on stderr.
TEST(StepDeadlineDeathTest, TheDefaultEndsTheProcessNamingTheWork) {
  EXPECT_EXIT(
      {
        StepDeadline deadline(absl::Milliseconds(10), nullptr);
        StepDeadline::Scope scope = deadline.Watch("rank 1's step 3");
        absl::SleepFor(absl::Minutes(1));
      },
      ::testing::ExitedWithCode(kStepOverrunExitCode),
      "step deadline: rank 1's step 3 ran longer than 10ms.*ending the "
      "process \\(exit code 70\\)");
}

}  // namespace
}  // namespace gradsync
