#include "loader/batch_loader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <set>
#include <thread>

namespace gradsync {
namespace {

// Image i is 8x8 grayscale with every pixel = i % 251; sample `bad` fails,
// sample `throws` throws a c10::Error (a LibTorch or OpenCV failure).
class FakeDataset : public Dataset {
 public:
  FakeDataset(int64_t n, std::set<int64_t> bad = {},
              std::set<int64_t> throws = {})
      : n_(n), bad_(bad), throws_(throws) {}
  int64_t size() const override { return n_; }
  int64_t label(int64_t i) const override { return i % 10; }
  int num_classes() const override { return 10; }
  std::string name(int64_t i) const override {
    return "/fake/" + std::to_string(i) + ".png";
  }
  absl::StatusOr<Image> Load(int64_t i) const override {
    if (bad_.count(i)) {
      return absl::DataLossError("image " + name(i) + " is corrupt");
    }
    TORCH_CHECK(throws_.count(i) == 0, "boom in a decoder");
    return Image(8, 8, 1, static_cast<uint8_t>(i % 251));
  }

 private:
  int64_t n_;
  std::set<int64_t> bad_, throws_;
};

std::unique_ptr<BatchLoader> MakeLoader(
    std::shared_ptr<const Dataset> data, int threads, int batch,
    std::shared_ptr<const Transform> t = nullptr, bool skip = false) {
  LoaderOptions o;
  o.threads = threads;
  o.batch_size = batch;
  o.seed = 3;
  o.skip_corrupt = skip;
  auto loader = BatchLoader::Create(std::move(data), std::move(t), o);
  EXPECT_TRUE(loader.ok()) << loader.status();
  return std::move(*loader);
}

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(BatchLoaderTest, EverySampleOnceInOrder) {
  auto data = std::make_shared<FakeDataset>(103);
  for (int threads : {1, 2, 4}) {
    auto loader = MakeLoader(data, threads, 10);
    std::vector<int64_t> shard = Range(103);
    std::reverse(shard.begin(), shard.end());
    ASSERT_TRUE(loader->StartEpoch(0, shard).ok());
    EXPECT_EQ(loader->num_batches(), 11);
    std::vector<int64_t> seen;
    Batch b;
    int64_t expected_index = 0;
    while (true) {
      auto got = loader->Next(&b);
      ASSERT_TRUE(got.ok()) << got.status();
      if (!*got) break;
      EXPECT_EQ(b.index, expected_index++);
      ASSERT_EQ(b.images.sizes(),
                (std::vector<int64_t>{b.images.size(0), 1, 8, 8}));
      for (int64_t r = 0; r < b.images.size(0); ++r) {
        const int64_t sample = b.samples[r];
        seen.push_back(sample);
        EXPECT_FLOAT_EQ(b.images[r][0][3][3].item<float>(),
                        (sample % 251) / 255.0f);
        EXPECT_EQ(b.labels[r].item<int64_t>(), sample % 10);
      }
    }
    EXPECT_EQ(seen, shard) << threads << " threads";
    // The end stays the end.
    auto again = loader->Next(&b);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);
  }
}

TEST(BatchLoaderTest, DropLastDropsTheShortBatch) {
  auto data = std::make_shared<FakeDataset>(25);
  LoaderOptions o;
  o.batch_size = 10;
  o.drop_last = true;
  auto loader = BatchLoader::Create(data, nullptr, o);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->StartEpoch(0, Range(25)).ok());
  EXPECT_EQ((*loader)->num_batches(), 2);
  Batch b;
  int batches = 0;
  while (*(*loader)->Next(&b)) {
    EXPECT_EQ(b.images.size(0), 10);
    ++batches;
  }
  EXPECT_EQ(batches, 2);
}

TEST(BatchLoaderTest, AugmentationIsIdenticalWhateverTheThreadCount) {
  auto data = std::make_shared<FakeDataset>(64);
  std::shared_ptr<const Transform> affine =
      std::make_shared<RandomAffine>(30, 0.2, 0.2, 0.5, 2.0);
  std::vector<at::Tensor> reference;
  for (int threads : {1, 3, 4}) {
    auto loader = MakeLoader(data, threads, 16, affine);
    ASSERT_TRUE(loader->StartEpoch(5, Range(64)).ok());
    Batch b;
    std::vector<at::Tensor> out;
    while (*loader->Next(&b)) out.push_back(b.images.clone());
    if (reference.empty()) {
      reference = out;
      continue;
    }
    ASSERT_EQ(out.size(), reference.size());
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_TRUE(torch::equal(out[i], reference[i])) << threads << " " << i;
    }
  }
  // Another epoch draws other augmentations.
  auto loader = MakeLoader(data, 2, 16, affine);
  ASSERT_TRUE(loader->StartEpoch(6, Range(64)).ok());
  Batch b;
  ASSERT_TRUE(*loader->Next(&b));
  EXPECT_FALSE(torch::equal(b.images, reference[0]));
}

TEST(BatchLoaderTest, CorruptSampleFailsNamingItsPath) {
  auto data = std::make_shared<FakeDataset>(30, std::set<int64_t>{13});
  auto loader = MakeLoader(data, 2, 10);
  ASSERT_TRUE(loader->StartEpoch(0, Range(30)).ok());
  Batch b;
  ASSERT_TRUE(*loader->Next(&b));
  auto bad = loader->Next(&b);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("/fake/13.png"), std::string::npos);
}

TEST(BatchLoaderTest, SkipCorruptCountsAndContinues) {
  auto data = std::make_shared<FakeDataset>(30, std::set<int64_t>{3, 13, 14});
  auto loader = MakeLoader(data, 2, 10, nullptr, /*skip=*/true);
  ASSERT_TRUE(loader->StartEpoch(0, Range(30)).ok());
  Batch b;
  std::vector<int64_t> seen;
  int64_t skipped = 0;
  while (*loader->Next(&b)) {
    skipped += b.skipped;
    EXPECT_EQ(b.images.size(0), static_cast<int64_t>(b.samples.size()));
    for (int64_t r = 0; r < b.images.size(0); ++r) {
      EXPECT_EQ(b.labels[r].item<int64_t>(), b.samples[r] % 10);
      seen.push_back(b.samples[r]);
    }
  }
  EXPECT_EQ(skipped, 3);
  EXPECT_EQ(loader->skipped_total(), 3);
  EXPECT_EQ(seen.size(), 27u);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 13), 0);
}

// Finding: an exception in a loader thread ended the worker process. It
// fails the sample like a corrupt file (named), or is skipped and counted.
TEST(BatchLoaderTest, ASampleThatThrowsFailsItsBatchNotTheProcess) {
  auto data = std::make_shared<FakeDataset>(30, std::set<int64_t>{},
                                            std::set<int64_t>{13});
  auto loader = MakeLoader(data, 2, 10);
  ASSERT_TRUE(loader->StartEpoch(0, Range(30)).ok());
  Batch b;
  ASSERT_TRUE(*loader->Next(&b));
  auto bad = loader->Next(&b);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("loading sample /fake/13.png: boom "
                                        "in a decoder"),
            std::string::npos)
      << bad.status();

  auto skipping = MakeLoader(data, 2, 10, nullptr, /*skip=*/true);
  ASSERT_TRUE(skipping->StartEpoch(0, Range(30)).ok());
  while (*skipping->Next(&b)) {
  }
  EXPECT_EQ(skipping->skipped_total(), 1);
}

// Finding: --batch-size 2000000000 aborted the workers allocating slots.
TEST(BatchLoaderTest, BatchSlotsBeyondTheMemoryBudgetAreRefused) {
  auto data = std::make_shared<FakeDataset>(30);
  LoaderOptions o;
  o.batch_size = 2000000000;
  auto huge = BatchLoader::Create(data, nullptr, o);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("batch_size 2000000000"),
            std::string::npos)
      << huge.status();
  o.batch_size = 100;
  o.max_slot_bytes = 10000;  // 2 x 2 slots x 100 x (8x8 floats + label)
  auto over = BatchLoader::Create(data, nullptr, o);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  o.max_slot_bytes = 4 * 100 * (8 * 8 * 4 + 8);
  EXPECT_TRUE(BatchLoader::Create(data, nullptr, o).ok());
}

TEST(BatchLoaderTest, NewEpochMidEpochAndStopDoNotHang) {
  auto data = std::make_shared<FakeDataset>(1000);
  auto loader = MakeLoader(data, 4, 8);
  ASSERT_TRUE(loader->StartEpoch(0, Range(1000)).ok());
  Batch b;
  ASSERT_TRUE(*loader->Next(&b));
  // Abandon epoch 0 after one batch; epoch 1 starts cleanly from batch 0.
  ASSERT_TRUE(loader->StartEpoch(1, Range(20)).ok());
  std::vector<int64_t> seen;
  while (*loader->Next(&b)) {
    seen.insert(seen.end(), b.samples.begin(), b.samples.end());
  }
  EXPECT_EQ(seen, Range(20));
  ASSERT_TRUE(loader->StartEpoch(2, Range(1000)).ok());
  ASSERT_TRUE(*loader->Next(&b));
  loader->Stop();  // mid-epoch: joins its threads
  EXPECT_EQ(loader->Next(&b).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(loader->StartEpoch(3, Range(5)).code(),
            absl::StatusCode::kCancelled);
}

TEST(BatchLoaderTest, RejectsBadOptionsAndIndices) {
  auto data = std::make_shared<FakeDataset>(10);
  LoaderOptions o;
  o.batch_size = 0;
  EXPECT_EQ(BatchLoader::Create(data, nullptr, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.batch_size = 4;
  o.threads = 0;
  EXPECT_EQ(BatchLoader::Create(data, nullptr, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto loader = MakeLoader(data, 1, 4);
  EXPECT_EQ(loader->StartEpoch(0, {1, 2, 10}).code(),
            absl::StatusCode::kInvalidArgument);
  Batch b;
  EXPECT_EQ(loader->Next(&b).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gradsync
