// A split held as a tensor file: OpenDataset finds <dir>/<split>.pt, the
// rows come out of the batch loader as x * (1/255) (uint8) or x (float32) with
// their targets, in the shard's order; what does not apply to tensors
// (augmentation, channels) and what is hostile (a negative class, a
// foreign global, a file outside the data roots) is refused naming it.
#include "loader/tensor_file_dataset.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "foundation/files/durable_file.h"
#include "loader/batch_loader.h"
#include "loader/open_dataset.h"
#include "loader/transforms.h"
#include "tests/fakes/tensor_files.h"
#include "tests/fakes/test_directory.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class TensorFileDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDirectory(); }

  // torch.save({"x": x, "y": y}, <dir>/<split>.pt), as LibTorch writes it.
  std::string Save(const std::string& split, const torch::Tensor& x,
                   const torch::Tensor& y) {
    c10::Dict<std::string, at::Tensor> dict;
    dict.insert("x", x);
    dict.insert("y", y);
    const std::vector<char> bytes = torch::pickle_save(dict);
    const std::string path = (dir_ / (split + ".pt")).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
    return path;
  }

  // Every batch of one epoch over `indices`, concatenated.
  static std::pair<torch::Tensor, torch::Tensor> Epoch(
      std::shared_ptr<const Dataset> set, std::vector<int64_t> indices) {
    LoaderOptions o;
    o.batch_size = 4;
    o.threads = 2;
    auto loader = BatchLoader::Create(set, nullptr, o);
    EXPECT_TRUE(loader.ok()) << loader.status();
    EXPECT_TRUE((*loader)->StartEpoch(0, indices).ok());
    std::vector<torch::Tensor> images, labels;
    Batch batch;
    while (true) {
      absl::StatusOr<bool> got = (*loader)->Next(&batch);
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok() || !*got) break;
      images.push_back(batch.images.clone());
      labels.push_back(batch.labels.clone());
    }
    return {torch::cat(images), torch::cat(labels)};
  }

  fs::path dir_;
};

TEST_F(TensorFileDatasetTest, ByteRowsComeOutAsToTensorWouldMakeThem) {
  const torch::Tensor x = torch::randint(0, 256, {10, 1, 4, 4}, torch::kUInt8);
  const torch::Tensor y = torch::randint(0, 3, {10}, torch::kInt64);
  y[7] = 4;  // classes are the largest index + 1
  Save("train", x, y);
  auto set = OpenDataset(dir_.string(), "train", 0);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_NE((*set)->tensors(), nullptr);
  EXPECT_EQ((*set)->size(), 10);
  EXPECT_EQ((*set)->num_classes(), 5);
  EXPECT_EQ((*set)->label(7), 4);
  EXPECT_EQ((*set)->Load(0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const std::vector<int64_t> order = {9, 2, 7, 0, 5, 3, 1};
  auto [images, labels] = Epoch(*set, order);
  const torch::Tensor index = torch::tensor(order, torch::kInt64);
  EXPECT_TRUE(torch::equal(
      images, x.index_select(0, index).to(torch::kFloat32).mul(1.f / 255.f)));
  EXPECT_TRUE(torch::equal(labels, y.index_select(0, index)));
}

TEST_F(TensorFileDatasetTest, FloatRowsAndFloatTargetsComeOutAsTheyAre) {
  const torch::Tensor x = torch::randn({9, 5});
  const torch::Tensor y = torch::randn({9, 2});
  Save("train", x, y);
  auto set = OpenDataset(dir_.string(), "train", 0);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->num_classes(), 0);
  auto [images, labels] = Epoch(*set, {8, 0, 4, 1, 2});
  const torch::Tensor index = torch::tensor({8, 0, 4, 1, 2}, torch::kInt64);
  EXPECT_TRUE(torch::equal(images, x.index_select(0, index)));
  EXPECT_TRUE(torch::equal(labels, y.index_select(0, index)));
}

TEST_F(TensorFileDatasetTest, WhatAppliesToImagesOnlyIsRefused) {
  Save("train", torch::zeros({4, 1, 8, 8}, torch::kUInt8),
       torch::zeros({4}, torch::kInt64));
  auto set = OpenDataset(dir_.string(), "train", 0);
  ASSERT_TRUE(set.ok()) << set.status();
  auto augment = MakeAugmentation("affine", 8, 8);
  ASSERT_TRUE(augment.ok());
  auto loader = BatchLoader::Create(*set, std::move(*augment), {});
  EXPECT_EQ(loader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(loader.status().message().find("augmentation and Normalize "
                                           "apply to images"),
            std::string::npos)
      << loader.status();
  auto gray = OpenDataset(dir_.string(), "train", 1);
  EXPECT_EQ(gray.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(gray.status().message().find("channels 1 applies to images"),
            std::string::npos)
      << gray.status();
}

TEST_F(TensorFileDatasetTest, HostileFilesAreRefusedNamingThem) {
  const std::string negative =
      Save("negative", torch::zeros({3, 2}), torch::tensor({0, -1, 2}));
  auto set = OpenDataset(dir_.string(), "negative", 0);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(set.status().message().find(
                negative + ": tensor file: y holds the class index -1"),
            std::string::npos)
      << set.status();

  testing::FakeTensorFile fake;
  fake.tensors["x"] =
      testing::MakeFakeTensor<float>("torch FloatStorage", {1, 2}, {2, 1});
  fake.tensors["y"] =
      testing::MakeFakeTensor<int64_t>("torch LongStorage", {0, 1}, {2});
  fake.foreign_global = "posix system";
  const std::string path = (dir_ / "foreign.pt").string();
  ASSERT_TRUE(
      WriteNewFile(path, testing::MakeTensorFile(fake), 0644, true).ok());
  set = OpenDataset(dir_.string(), "foreign", 0);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(set.status().message().find(
                path + ": tensor file: its pickle names the global 'posix "
                       "system'"),
            std::string::npos)
      << set.status();

  DatasetAccess confined;
  confined.data_roots = {(dir_ / "elsewhere").string()};
  fs::create_directories(dir_ / "elsewhere");
  Save("train", torch::zeros({2, 2}), torch::tensor({0, 1}));
  set = OpenDataset(dir_.string(), "train", 0, confined);
  EXPECT_EQ(set.status().code(), absl::StatusCode::kPermissionDenied)
      << set.status();
}

}  // namespace
}  // namespace gradsync
