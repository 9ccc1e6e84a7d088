#include "coordinator/control/job_state.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

constexpr v1::JobState kAll[] = {
    v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_PENDING,
    v1::JOB_STATE_RENDEZVOUS,  v1::JOB_STATE_RUNNING,
    v1::JOB_STATE_SUCCEEDED,   v1::JOB_STATE_FAILED,
    v1::JOB_STATE_CANCELLED};

TEST(JobStateTest, TerminalStatesLeadNowhere) {
  for (v1::JobState from : kAll) {
    const bool terminal = from == v1::JOB_STATE_SUCCEEDED ||
                          from == v1::JOB_STATE_FAILED ||
                          from == v1::JOB_STATE_CANCELLED;
    EXPECT_EQ(IsTerminal(from), terminal) << JobStateName(from);
    if (!terminal) continue;
    for (v1::JobState to : kAll) {
      EXPECT_FALSE(IsAllowedTransition(from, to))
          << JobStateName(from) << " -> " << JobStateName(to);
    }
  }
}

TEST(JobStateTest, TheDocumentedTransitionsAndNoOthers) {
  using S = v1::JobState;
  const std::vector<std::pair<S, S>> allowed = {
      {v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_PENDING},
      {v1::JOB_STATE_PENDING, v1::JOB_STATE_RENDEZVOUS},
      {v1::JOB_STATE_PENDING, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_PENDING, v1::JOB_STATE_CANCELLED},
      {v1::JOB_STATE_RENDEZVOUS, v1::JOB_STATE_RUNNING},
      {v1::JOB_STATE_RENDEZVOUS, v1::JOB_STATE_PENDING},
      {v1::JOB_STATE_RENDEZVOUS, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_RENDEZVOUS, v1::JOB_STATE_CANCELLED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_PENDING},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_CANCELLED}};
  for (S from : kAll) {
    for (S to : kAll) {
      const bool want = std::find(allowed.begin(), allowed.end(),
                                  std::make_pair(from, to)) != allowed.end();
      EXPECT_EQ(IsAllowedTransition(from, to), want)
          << JobStateName(from) << " -> " << JobStateName(to);
    }
  }
}

TEST(JobStateTest, NamesDropThePrefix) {
  EXPECT_EQ(JobStateName(v1::JOB_STATE_RUNNING), "RUNNING");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_CANCELLED), "CANCELLED");
}

TEST(JobStateTest, FindAttemptRecord) {
  v1::Job job;
  EXPECT_EQ(FindAttemptRecord(job, 1), nullptr);
  job.add_attempts()->set_attempt(1);
  job.add_attempts()->set_attempt(2);
  v1::AttemptRecord* second = FindAttemptRecord(job, 2);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second, &job.mutable_attempts()->at(1));
  EXPECT_EQ(FindAttemptRecord(job, 3), nullptr);
}

}  // namespace
}  // namespace gradsync
