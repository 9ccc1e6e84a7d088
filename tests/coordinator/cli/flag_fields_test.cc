// FlagOfError: the coordinator's errors name JobSpec fields; the CLI adds
// the flag a user types.
#include "coordinator/cli/flag_fields.h"

#include <gtest/gtest.h>

#include <set>

namespace gradsync::cli {
namespace {

TEST(FlagFieldsTest, TheFlagOfTheFieldAnErrorNames) {
  EXPECT_EQ(FlagOfError("job_spec.batch_size must be in [1, 1048576] per "
                        "rank (got 0)"),
            "--batch-size");
  EXPECT_EQ(FlagOfError("job_spec.world_size.max_workers must be >= 1"),
            "--workers");
  EXPECT_EQ(FlagOfError("job_spec.world_size.min_workers must be <= max"),
            "--min-workers");
  EXPECT_EQ(FlagOfError("checkpoint.directory /x is outside every ..."),
            "--checkpoint-dir");
  EXPECT_EQ(FlagOfError("job_spec.optimizer.learning_rate must be > 0"),
            "--lr");
  EXPECT_EQ(FlagOfError("dataset.path data/x: no such directory"), "--dataset");
  // Not a field: no flag.
  EXPECT_EQ(FlagOfError("job_spec.snapshot_keep_last must be >= 1"), "");
  EXPECT_EQ(FlagOfError("the queue is full"), "");
  // A prefix of a field is not the field.
  EXPECT_EQ(FlagOfError("job_spec.epochsx must be"), "");
}

TEST(FlagFieldsTest, EveryFlagIsListedOnce) {
  std::set<std::string> flags;
  for (const FlagField& f : SubmitFlagFields()) {
    EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
  }
}

}  // namespace
}  // namespace gradsync::cli
