// BuildJobSpec: what `gradsync submit` sends for the paths it is given.
#include "coordinator/cli/job_flags.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace gradsync::cli {
namespace {

TEST(JobFlagsTest, RelativePathsAreTakenFromWhereTheCliRuns) {
  JobFlags f;
  f.dataset = "data/fashion-mnist";
  f.checkpoint_dir = "ckpt";
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string here = std::filesystem::current_path().string();
  EXPECT_EQ(spec->dataset().path(), here + "/data/fashion-mnist");
  EXPECT_EQ(spec->checkpoint().directory(), here + "/ckpt");
}

// Finding: synthetic:cifar10 became <cwd>/synthetic:cifar10, a folder the
// coordinator then failed to scan.
TEST(JobFlagsTest, ASyntheticDataSetIsANameNotAPath) {
  JobFlags f;
  f.dataset = "synthetic:cifar10";
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->dataset().path(), "synthetic:cifar10");
}

}  // namespace
}  // namespace gradsync::cli
