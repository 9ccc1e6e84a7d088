// BuildJobSpec: what `gradsync submit` sends for the paths it is given.
#include "coordinator/cli/job_flags.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace gradsync::cli {
namespace {

// The flags every job needs, with `dataset`.
JobFlags Needed(const std::string& dataset) {
  JobFlags f;
  f.dataset = dataset;
  f.model = "mlp";
  f.batch_size = 8;
  f.workers = 2;
  return f;
}

// A relative data set is where the CLI runs; relative checkpoint paths
// are each worker's, under its --checkpoint-root (finding: from / a
// relative --checkpoint-dir became "/ckpt", outside every root).
TEST(JobFlagsTest, RelativeDataIsTheCliSAndRelativeCheckpointsTheWorkers) {
  JobFlags f = Needed("data/fashion-mnist");
  f.checkpoint_dir = "ckpt";
  f.resume_from = "old/model-step-10.pt";
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string here = std::filesystem::current_path().string();
  EXPECT_EQ(spec->dataset().path(), here + "/data/fashion-mnist");
  EXPECT_EQ(spec->checkpoint().directory(), "ckpt");
  EXPECT_EQ(spec->checkpoint().resume_from(), "old/model-step-10.pt");
}

// Finding: synthetic:cifar10 became <cwd>/synthetic:cifar10, a folder the
// coordinator then failed to scan.
TEST(JobFlagsTest, ASyntheticDataSetIsANameNotAPath) {
  JobFlags f = Needed("synthetic:cifar10");
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->dataset().path(), "synthetic:cifar10");
}

// Finding: a missing --batch-size was "job_spec.batch_size must be in [1,
// 1048576] per rank (got 0)", a missing -n "max_workers must be >= 1 (got
// 0)": the user is told the flag to type.
TEST(JobFlagsTest, MissingRequiredFlagsAreNamedAsTyped) {
  JobFlags f = Needed("synthetic:tiny");
  f.batch_size.reset();
  absl::Status s = BuildJobSpec(f).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--batch-size is required (or, in a job file, batch_size)");
  JobFlags none;
  s = BuildJobSpec(none).status();
  EXPECT_EQ(s.message(),
            "--dataset, --model or --model-file, --batch-size, --workers "
            "(-n) are required "
            "(or, in a job file, dataset.path, model, batch_size, "
            "world_size.max_workers)");
  // --max-workers alone sets the world size.
  f = Needed("synthetic:tiny");
  f.workers.reset();
  f.max_workers = 4;
  EXPECT_TRUE(BuildJobSpec(f).ok());
  // A value given, even 0, is the coordinator's to judge (it names the
  // range).
  f = Needed("synthetic:tiny");
  f.batch_size = 0;
  EXPECT_TRUE(BuildJobSpec(f).ok());
}

}  // namespace
}  // namespace gradsync::cli
