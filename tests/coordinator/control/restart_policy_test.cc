// DecideRestart without a Coordinator: each rule, and which one wins when
// several apply (restart_test covers the Coordinator acting on them).
#include "coordinator/control/restart_policy.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

FailedAttempt Restartable() {
  FailedAttempt a;
  a.reason = "rank 1 failed";
  a.error = "io error";
  a.previous_error = "";
  a.restarts = 0;
  a.max_restarts = 2;
  a.available_workers = 2;
  a.min_workers = 2;
  return a;
}

TEST(RestartPolicyTest, RestartsWhenNoRuleStopsIt) {
  RestartDecision d = DecideRestart(Restartable());
  EXPECT_TRUE(d.restart);
  EXPECT_TRUE(d.failure.empty());
}

TEST(RestartPolicyTest, ARefusedSettingIsNotRestarted) {
  for (const char* error :
       {"PERMISSION_DENIED: checkpoint.directory /elsewhere is outside",
        "INVALID_ARGUMENT: model fashion_cnn takes 28x28 images",
        "FAILED_PRECONDITION: model file: __torch__.Net.forward calls "
        "aten::save"}) {
    FailedAttempt a = Restartable();
    a.error = error;
    RestartDecision d = DecideRestart(a);
    EXPECT_FALSE(d.restart) << error;
    EXPECT_EQ(d.failure,
              "rank 1 failed; the job's own settings are refused, which a "
              "restart would not change");
  }
  // Other codes (a lost peer, a damaged file) may be transient.
  FailedAttempt a = Restartable();
  a.error = "UNAVAILABLE: peer closed the connection";
  EXPECT_TRUE(DecideRestart(a).restart);
  a.error = "FAILED_PRECONDITION: the data set differs between hosts";
  EXPECT_TRUE(DecideRestart(a).restart);
}

TEST(RestartPolicyTest, TheSameErrorTwiceIsNotRestartedAgain) {
  FailedAttempt a = Restartable();
  a.previous_error = "io error";
  a.available_workers = 0;  // also too few: the repeated error is named
  RestartDecision d = DecideRestart(a);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.failure,
            "rank 1 failed; the previous attempt failed with the same error, "
            "so it is not restarted again");
  // Two attempts without an error (dead workers) are not "the same error".
  a = Restartable();
  a.error = a.previous_error = "";
  EXPECT_TRUE(DecideRestart(a).restart);
}

TEST(RestartPolicyTest, TheLimitAndOffAreNamed) {
  FailedAttempt a = Restartable();
  a.restarts = 2;
  EXPECT_EQ(DecideRestart(a).failure,
            "rank 1 failed; restart limit (2) reached");
  a.restarts = 0;
  a.max_restarts = 0;
  EXPECT_EQ(DecideRestart(a).failure,
            "rank 1 failed; restarts are off (max_restarts 0)");
}

TEST(RestartPolicyTest, TooFewWorkersWaitForReplacementsOrFailWithoutAWait) {
  FailedAttempt a = Restartable();
  a.available_workers = 1;
  a.restart_wait_ms = 60000;
  RestartDecision d = DecideRestart(a);
  EXPECT_TRUE(d.restart);
  EXPECT_TRUE(d.waits_for_workers);
  a.available_workers = 2;
  EXPECT_FALSE(DecideRestart(a).waits_for_workers);
  // Without a wait (today's rule before the wait existed): fail at once.
  a.available_workers = 1;
  a.restart_wait_ms = 0;
  d = DecideRestart(a);
  EXPECT_FALSE(d.restart);
  EXPECT_EQ(d.failure,
            "rank 1 failed; cannot restart: 1 worker(s) available, the job "
            "needs at least 2 (restart wait 0)");
}

}  // namespace
}  // namespace gradsync
