#include "loader/synthetic_dataset.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "loader/open_dataset.h"

namespace gradsync {
namespace {

TEST(SyntheticDatasetTest, Cifar10Shape) {
  auto train = OpenDataset("synthetic:cifar10", "train", 0);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ((*train)->size(), 50000);
  EXPECT_EQ((*train)->num_classes(), 10);
  auto image = (*train)->Load(49999);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->shape(), (ImageShape{32, 32, 3}));
  auto test = OpenDataset("synthetic:cifar10", "test", 1);
  ASSERT_TRUE(test.ok());
  EXPECT_EQ((*test)->size(), 10000);
  EXPECT_EQ((*test)->Load(0)->channels(), 1);
}

TEST(SyntheticDatasetTest, SamplesAreAFunctionOfTheirIndex) {
  auto a = SyntheticDataset::Open("synthetic:tiny", "train", 0);
  auto b = SyntheticDataset::Open("synthetic:tiny", "train", 0);
  auto other_split = SyntheticDataset::Open("synthetic:tiny", "test", 0);
  ASSERT_TRUE(a.ok() && b.ok() && other_split.ok());
  std::set<int64_t> labels;
  for (int64_t i = 0; i < (*a)->size(); ++i) {
    ASSERT_EQ((*a)->label(i), (*b)->label(i));
    ASSERT_TRUE(*(*a)->Load(i) == *(*b)->Load(i)) << "sample " << i;
    labels.insert((*a)->label(i));
  }
  EXPECT_EQ(labels, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(*(*a)->Load(0) == *(*a)->Load(1));
  EXPECT_FALSE(*(*a)->Load(0) == *(*other_split)->Load(0));
}

// The classes can be learnt: a sample is nearer its own class's mean image
// than another class's (nearest class mean classifies well).
TEST(SyntheticDatasetTest, ClassesAreSeparable) {
  auto data = SyntheticDataset::Open("synthetic:tiny", "train", 0);
  ASSERT_TRUE(data.ok());
  const int classes = (*data)->num_classes();
  const size_t bytes = (*data)->Load(0)->size_bytes();
  std::vector<std::vector<double>> mean(classes, std::vector<double>(bytes, 0));
  std::vector<int> count(classes, 0);
  for (int64_t i = 0; i < (*data)->size(); ++i) {
    const Image image = *(*data)->Load(i);
    const int k = static_cast<int>((*data)->label(i));
    for (size_t j = 0; j < bytes; ++j) mean[k][j] += image.data()[j];
    ++count[k];
  }
  for (int k = 0; k < classes; ++k) {
    ASSERT_GT(count[k], 0);
    for (double& v : mean[k]) v /= count[k];
  }
  auto test = SyntheticDataset::Open("synthetic:tiny", "test", 0);
  int right = 0;
  for (int64_t i = 0; i < (*test)->size(); ++i) {
    const Image image = *(*test)->Load(i);
    int best = -1;
    double best_d = 0;
    for (int k = 0; k < classes; ++k) {
      double d = 0;
      for (size_t j = 0; j < bytes; ++j) {
        const double e = image.data()[j] - mean[k][j];
        d += e * e;
      }
      if (best < 0 || d < best_d) best = k, best_d = d;
    }
    right += best == (*test)->label(i);
  }
  EXPECT_GT(right, (*test)->size() * 9 / 10);
}

TEST(SyntheticDatasetTest, BadNamesSayWhatExists) {
  auto preset = OpenDataset("synthetic:imagenet", "train", 0);
  EXPECT_EQ(preset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(preset.status().message().find("synthetic:cifar10"),
            std::string::npos)
      << preset.status();
  auto split = OpenDataset("synthetic:cifar10", "val", 0);
  EXPECT_EQ(split.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(split.status().message().find("train, test"), std::string::npos);
  EXPECT_EQ(OpenDataset("synthetic:cifar10", "train", 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto index = SyntheticDataset::Open("synthetic:tiny", "test", 0);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ((*index)->Load(128).status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace gradsync
