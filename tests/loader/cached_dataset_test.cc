// CachedDataset: a decoded image is kept after its first Load and served
// from memory afterwards, within a shared MemoryBudget; errors are never
// cached, and a destroyed cache gives its bytes back.
#include "loader/cached_dataset.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// 8x8 grey images whose pixels are their index; sample `bad` fails.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n, int64_t bad = -1) : n_(n), bad_(bad) {}
  int64_t size() const override { return n_; }
  int64_t label(int64_t i) const override { return i % 2; }
  std::string name(int64_t i) const override {
    return absl::StrCat("/data/", i, ".png");
  }
  int num_classes() const override { return 2; }
  absl::StatusOr<Image> Load(int64_t i) const override {
    loads_.fetch_add(1);
    if (i == bad_) return absl::DataLossError(absl::StrCat(name(i), ": bad"));
    return Image(8, 8, 1, static_cast<uint8_t>(i));
  }
  int64_t loads() const { return loads_.load(); }

 private:
  const int64_t n_, bad_;
  mutable std::atomic<int64_t> loads_{0};
};

int64_t OneImage() { return CachedDataset::ChargeFor(Image(8, 8, 1)); }

TEST(CachedDatasetTest, TheSecondEpochDoesNotDecode) {
  auto inner = std::make_shared<CountingDataset>(10);
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  CachedDataset cache(inner, budget);
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int64_t i = 0; i < 10; ++i) {
      auto image = cache.Load(i);
      ASSERT_TRUE(image.ok()) << image.status();
      EXPECT_EQ(*image, Image(8, 8, 1, static_cast<uint8_t>(i)));
    }
  }
  EXPECT_EQ(inner->loads(), 10);
  EXPECT_EQ(cache.cached_samples(), 10);
  EXPECT_EQ(budget->used(), 10 * OneImage());
  EXPECT_EQ(cache.label(3), 1);
  EXPECT_EQ(cache.name(3), "/data/3.png");
}

TEST(CachedDatasetTest, ACallerChangingItsCopyDoesNotChangeTheCache) {
  auto inner = std::make_shared<CountingDataset>(1);
  CachedDataset cache(inner, std::make_shared<MemoryBudget>(1 << 20));
  auto first = cache.Load(0);
  ASSERT_TRUE(first.ok());
  first->data()[0] = 99;  // what an in-place transform would do
  auto second = cache.Load(0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->data()[0], 0);
}

TEST(CachedDatasetTest, PastTheBudgetSamplesAreDecodedEveryTime) {
  auto inner = std::make_shared<CountingDataset>(10);
  auto budget = std::make_shared<MemoryBudget>(4 * OneImage());
  CachedDataset cache(inner, budget);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t i = 0; i < 10; ++i) {
      auto image = cache.Load(i);
      ASSERT_TRUE(image.ok());
      EXPECT_EQ(image->data()[0], i);
    }
  }
  EXPECT_EQ(cache.cached_samples(), 4);  // the first four loaded
  EXPECT_EQ(inner->loads(), 10 + 6);
  EXPECT_EQ(budget->used(), 4 * OneImage());
}

TEST(CachedDatasetTest, ErrorsAreNotCachedAndNameTheSample) {
  auto inner = std::make_shared<CountingDataset>(3, /*bad=*/1);
  CachedDataset cache(inner, std::make_shared<MemoryBudget>(1 << 20));
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto bad = cache.Load(1);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(bad.status().message().find("/data/1.png"), std::string::npos);
  }
  EXPECT_EQ(inner->loads(), 2);
  EXPECT_EQ(cache.Load(7).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(cache.Load(-1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(CachedDatasetTest, CachesShareOneBudgetAndGiveItBackWhenDestroyed) {
  auto budget = std::make_shared<MemoryBudget>(6 * OneImage());
  auto a = std::make_unique<CachedDataset>(
      std::make_shared<CountingDataset>(4), budget);
  auto b_inner = std::make_shared<CountingDataset>(4);
  CachedDataset b(b_inner, budget);
  for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(a->Load(i).ok());
  for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(b.Load(i).ok());
  EXPECT_EQ(a->cached_samples(), 4);
  EXPECT_EQ(b.cached_samples(), 2);
  a.reset();  // a finished task's cache
  EXPECT_EQ(budget->used(), 2 * OneImage());
  for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(b.Load(i).ok());
  EXPECT_EQ(b.cached_samples(), 4);
  EXPECT_EQ(b_inner->loads(), 4 + 2);
}

TEST(CachedDatasetTest, ThreadsLoadingTheSameSamplesKeepOneCopyEach) {
  auto inner = std::make_shared<CountingDataset>(64);
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  CachedDataset cache(inner, budget);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        for (int64_t i = 0; i < 64; ++i) {
          auto image = cache.Load(i);
          if (!image.ok() || image->data()[0] != i) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(cache.cached_samples(), 64);
  EXPECT_EQ(budget->used(), 64 * OneImage());  // racing copies given back
}

TEST(MemoryBudgetTest, ChargesOnlyWhatFits) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.TryCharge(60));
  EXPECT_FALSE(budget.TryCharge(41));
  EXPECT_TRUE(budget.TryCharge(40));
  EXPECT_FALSE(budget.TryCharge(1));
  EXPECT_FALSE(budget.TryCharge(-5));
  budget.Release(60);
  EXPECT_EQ(budget.used(), 40);
  MemoryBudget none(0);
  EXPECT_FALSE(none.TryCharge(1));
}

}  // namespace
}  // namespace gradsync
