// CheckCheckpointPaths: what every registered worker would refuse is
// refused at submit, with the roots named; what some worker could accept,
// and anything when a worker did not say its root, is left to the workers.
#include "coordinator/control/checkpoint_paths.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

v1::JobSpec WithCheckpoint(const std::string& directory,
                           const std::string& resume_from = "") {
  v1::JobSpec spec;
  spec.mutable_checkpoint()->set_directory(directory);
  spec.mutable_checkpoint()->set_resume_from(resume_from);
  return spec;
}

TEST(CheckpointPathsTest, RelativePathsAreTakenUnderEachRoot) {
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("ckpt"), {"/w"}).ok());
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("a/../ckpt"), {"/w"}).ok());
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("ckpt"), {}).ok());
  absl::Status s = CheckCheckpointPaths(WithCheckpoint("../elsewhere"), {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("checkpoint.directory ../elsewhere climbs out"),
            std::string::npos)
      << s;
  s = CheckCheckpointPaths(WithCheckpoint("", "a/../../x"), {"/w"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("checkpoint.resume_from"), std::string::npos);
}

TEST(CheckpointPathsTest, AnAbsolutePathOutsideEveryRootIsRefused) {
  EXPECT_TRUE(
      CheckCheckpointPaths(WithCheckpoint("/w/a/ckpt"), {"/w/a", "/w/b"}).ok());
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("/w/a"), {"/w/a/"}).ok());
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("/anything"), {"/"}).ok());
  absl::Status s =
      CheckCheckpointPaths(WithCheckpoint("/w/ab/ckpt"), {"/w/a", "/w/b"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("checkpoint.directory /w/ab/ckpt is outside "
                             "every registered worker's checkpoint root "
                             "(/w/a, /w/b)"),
            std::string::npos)
      << s;
  // Climbing out lexically is outside too.
  EXPECT_FALSE(
      CheckCheckpointPaths(WithCheckpoint("/w/a/../c"), {"/w/a"}).ok());
}

TEST(CheckpointPathsTest, UnknownRootsLeaveAbsolutePathsToTheWorkers) {
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("/x"), {}).ok());
  EXPECT_TRUE(CheckCheckpointPaths(WithCheckpoint("/x"), {"/w", ""}).ok());
}

}  // namespace
}  // namespace gradsync
