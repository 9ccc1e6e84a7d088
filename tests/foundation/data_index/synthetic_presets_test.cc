// The synthetic data sets' sizes as the coordinator counts them (no
// LibTorch): the presets, their splits, and what an unknown one is told.
#include "foundation/data_index/synthetic_presets.h"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(SyntheticPresetsTest, SplitSizes) {
  EXPECT_EQ(*SyntheticSplitSize("synthetic:cifar10", "train"), 50000);
  EXPECT_EQ(*SyntheticSplitSize("synthetic:cifar10", "test"), 10000);
  EXPECT_EQ(*SyntheticSplitSize("synthetic:tiny", "train"), 512);
  EXPECT_EQ(*SyntheticSplitSize("synthetic:tiny", "test"), 128);
  absl::StatusOr<SyntheticPreset> tiny = FindSyntheticPreset("synthetic:tiny");
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->classes, 4);
  EXPECT_EQ(tiny->rows * tiny->cols * tiny->channels, 12 * 12 * 3);
}

TEST(SyntheticPresetsTest, PathsAreRecognisedByPrefix) {
  EXPECT_TRUE(IsSyntheticPath("synthetic:tiny"));
  EXPECT_TRUE(IsSyntheticPath("synthetic:nonsense"));
  EXPECT_FALSE(IsSyntheticPath("data/synthetic:tiny"));
  EXPECT_FALSE(IsSyntheticPath("/data/fashion-mnist"));
}

TEST(SyntheticPresetsTest, UnknownPresetsAndSplitsAreNamed) {
  absl::StatusOr<int64_t> preset =
      SyntheticSplitSize("synthetic:imagenet", "train");
  EXPECT_EQ(preset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(preset.status().message().find("synthetic:cifar10"),
            std::string::npos)
      << preset.status();
  absl::StatusOr<int64_t> split = SyntheticSplitSize("synthetic:tiny", "val");
  EXPECT_EQ(split.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(split.status().message().find("train, test"), std::string::npos)
      << split.status();
  EXPECT_EQ(FindSyntheticPreset("data/x").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
