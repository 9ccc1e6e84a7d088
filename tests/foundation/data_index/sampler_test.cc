#include "foundation/data_index/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace gradsync {
namespace {

TEST(SamplerTest, NumSamplesRoundsUpOrDown) {
  EXPECT_EQ(DistributedNumSamples(10, 3, false), 4);
  EXPECT_EQ(DistributedNumSamples(10, 3, true), 3);
  EXPECT_EQ(DistributedNumSamples(9, 3, true), 3);
  EXPECT_EQ(DistributedNumSamples(0, 2, false), 0);
}

TEST(SamplerTest, RanksCoverEverySampleWithPaddingFromTheHead) {
  SamplerOptions o;
  o.dataset_size = 10;
  o.world_size = 4;
  o.seed = 7;
  std::multiset<int64_t> all;
  for (o.rank = 0; o.rank < 4; ++o.rank) {
    auto shard = DistributedSamplerIndices(o);
    ASSERT_TRUE(shard.ok()) << shard.status();
    EXPECT_EQ(shard->size(), 3u);
    all.insert(shard->begin(), shard->end());
  }
  EXPECT_EQ(all.size(), 12u);  // 10 samples + 2 padding duplicates
  for (int64_t i = 0; i < 10; ++i) EXPECT_GE(all.count(i), 1u) << i;
}

TEST(SamplerTest, UnshuffledShardIsStrided) {
  SamplerOptions o;
  o.dataset_size = 7;
  o.world_size = 3;
  o.rank = 1;
  o.shuffle = false;
  auto shard = DistributedSamplerIndices(o);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(*shard, (std::vector<int64_t>{1, 4, 0}));  // 0 is padding
  o.drop_last = true;
  shard = DistributedSamplerIndices(o);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(*shard, (std::vector<int64_t>{1, 4}));
}

TEST(SamplerTest, EpochChangesTheOrderDeterministically) {
  SamplerOptions o;
  o.dataset_size = 100;
  auto a = DistributedSamplerIndices(o);
  auto b = DistributedSamplerIndices(o);
  o.epoch = 1;
  auto c = DistributedSamplerIndices(o);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
}

// Finding: seed + epoch overflowed for a seed near INT64_MAX (undefined
// behaviour; a job spec's seed is any int64). It wraps as the low bits of
// Python's sum: INT64_MAX + 1 and INT64_MIN + 0 seed the same order.
TEST(SamplerTest, ASeedNearTheLimitWrapsLikePython) {
  EXPECT_EQ(EpochOrder(50, INT64_MAX, 1, true),
            EpochOrder(50, INT64_MIN, 0, true));
  EXPECT_EQ(DistributedNumSamples(INT64_MAX, 2, false), INT64_MAX / 2 + 1);
}

TEST(SamplerTest, RandPermIsAPermutation) {
  std::vector<int64_t> p = TorchRandPerm(1000, 3);
  std::sort(p.begin(), p.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(p[i], i);
}

TEST(SamplerTest, RejectsBadShapes) {
  SamplerOptions o;
  o.dataset_size = 10;
  o.world_size = 0;
  EXPECT_EQ(DistributedSamplerIndices(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.world_size = 2;
  o.rank = 2;
  EXPECT_EQ(DistributedSamplerIndices(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.rank = 0;
  o.dataset_size = -1;
  EXPECT_EQ(DistributedSamplerIndices(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SamplerTest, EvalShardsCoverEachSampleExactlyOnce) {
  std::vector<int> seen(11, 0);
  for (int rank = 0; rank < 4; ++rank) {
    auto shard = EvalShardIndices(11, 4, rank);
    ASSERT_TRUE(shard.ok());
    for (int64_t i : *shard) ++seen[i];
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

}  // namespace
}  // namespace gradsync
