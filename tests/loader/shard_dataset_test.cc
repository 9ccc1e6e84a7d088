// An image folder written as shards by to-shards reads back sample for
// sample as the folder does (same images, labels, order), through
// OpenDataset; to-shards refuses a FIFO in the folder; a bomb inside a
// shard, a shard outside the data roots and a shard changed under a reader
// are refused naming the shard.
#include "loader/shard_dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <sstream>

#include "foundation/data_index/tar_member.h"
#include "loader/open_dataset.h"
#include "loader/tools/to_shards.h"
#include "tests/fakes/fifo_reader.h"
#include "tests/fakes/image_headers.h"
#include "tests/fakes/test_directory.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class ShardDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshTestDirectory();
    // folder/train: 3 classes x 5 random 6x7 grayscale PNGs.
    std::mt19937 gen(3);
    for (int c = 0; c < 3; ++c) {
      const fs::path dir =
          root_ / "folder" / "train" / ("c" + std::to_string(c));
      fs::create_directories(dir);
      for (int i = 0; i < 5; ++i) {
        cv::Mat image(6, 7, CV_8UC1);
        for (int p = 0; p < 42; ++p) image.data[p] = gen() % 256;
        ASSERT_TRUE(
            cv::imwrite((dir / (std::to_string(i) + ".png")).string(), image));
      }
    }
  }

  fs::path root_;
};

TEST_F(ShardDatasetTest, ShardsReadBackAsTheFolderTheyWereMadeFrom) {
  ToShardsOptions o;
  o.folder = (root_ / "folder" / "train").string();
  o.out = (root_ / "shards" / "train").string();
  o.shard_size = 4;
  std::ostringstream progress;
  absl::StatusOr<int64_t> written = WriteShards(o, progress);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, 4);  // 15 samples, 4 per shard
  auto folder = OpenDataset((root_ / "folder").string(), "train", 0);
  auto shards = OpenDataset((root_ / "shards").string(), "train", 0);
  ASSERT_TRUE(folder.ok()) << folder.status();
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_EQ((*shards)->size(), 15);
  EXPECT_EQ((*shards)->num_classes(), 3);
  EXPECT_EQ((*shards)->name(5),
            (root_ / "shards" / "train" / "shard-000001.tar").string() +
                ":00000005.png");
  for (int64_t i = 0; i < 15; ++i) {
    EXPECT_EQ((*shards)->label(i), (*folder)->label(i));
    auto a = (*folder)->Load(i);
    auto b = (*shards)->Load(i);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    ASSERT_EQ(a->shape(), b->shape());
    EXPECT_EQ(0, std::memcmp(a->data(), b->data(),
                             a->rows() * a->cols() * a->channels()))
        << i;
  }
}

// to-shards reads what a loader reads: a FIFO named like an image is
// refused at once by path, not waited on.
TEST_F(ShardDatasetTest, ToShardsRefusesAFifoNamedLikeAnImage) {
  const std::string fifo =
      (root_ / "folder" / "train" / "c1" / "9.png").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ToShardsOptions o;
  o.folder = (root_ / "folder" / "train").string();
  o.out = (root_ / "shards" / "train").string();
  std::ostringstream progress;
  const absl::Status s = ReadWithoutWaiting(fifo, [&] {
                           return WriteShards(o, progress);
                         }).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("image " + fifo + " is not a regular file"),
            std::string::npos)
      << s;
}

TEST_F(ShardDatasetTest, ABombAChangedShardAndAShardOutsideTheRootsAreNamed) {
  const fs::path dir = root_ / "bad" / "train";
  fs::create_directories(dir);
  const std::string shard = (dir / "a.tar").string();
  std::ofstream(shard, std::ios::binary)
      << TarFileMember("k1.png", PngHeader(100000, 100000))
      << TarFileMember("k1.cls", "0") << TarEnd();
  auto set = OpenDataset((root_ / "bad").string(), "train", 0);
  ASSERT_TRUE(set.ok()) << set.status();
  auto bomb = (*set)->Load(0);
  EXPECT_EQ(bomb.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(bomb.status().message().find(shard + ":k1.png"), std::string::npos)
      << bomb.status();

  std::ofstream(shard, std::ios::app | std::ios::binary) << "changed";
  auto changed = (*set)->Load(0);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(changed.status().message().find(shard + " changed since it was "
                                                    "indexed"),
            std::string::npos)
      << changed.status();

  DatasetAccess confined;
  confined.data_roots = {(root_ / "bad").string()};
  const fs::path outside = root_ / "outside.tar";
  fs::copy_file(shard, outside);
  fs::create_symlink(outside, dir / "b.tar");
  auto escaped = OpenDataset((root_ / "bad").string(), "train", 0, confined);
  EXPECT_EQ(escaped.status().code(), absl::StatusCode::kPermissionDenied)
      << escaped.status();
}

// np.save's bytes for a uint8 array of `shape_text` ("(2, 3)") holding
// `data` (format 1.0: the header padded with spaces to 64 bytes).
std::string Npy(const std::string& descr, const std::string& shape_text,
                const std::string& data) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape_text +
                       ", }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) +
         char(header.size() >> 8) + header + data;
}

TEST_F(ShardDatasetTest, NpyArraysAreImagesAndTheirHeadersAreChecked) {
  const fs::path dir = root_ / "npy" / "train";
  fs::create_directories(dir);
  std::ofstream(dir / "a.tar", std::ios::binary)
      << TarFileMember("k1.npy", Npy("|u1", "(2, 3)", "abcdef"))
      << TarFileMember("k1.cls", "1")
      << TarFileMember("k2.npy", Npy("<f4", "(2, 3)", std::string(24, 'x')))
      << TarFileMember("k2.cls", "0")
      << TarFileMember("k3.npy", Npy("|u1", "(2, 3, 3)", "short"))
      << TarFileMember("k3.cls", "0") << TarEnd();
  auto set = OpenDataset((root_ / "npy").string(), "train", 0);
  ASSERT_TRUE(set.ok()) << set.status();
  auto image = (*set)->Load(0);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->shape(), (ImageShape{2, 3, 1}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(image->data()), 6),
            "abcdef");
  auto floats = (*set)->Load(1);
  EXPECT_EQ(floats.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(floats.status().message().find(
                "k2.npy: an .npy image holds uint8 ('|u1'), not '<f4'"),
            std::string::npos)
      << floats.status();
  auto cut = (*set)->Load(2);
  EXPECT_NE(cut.status().message().find(
                "k3.npy: its .npy data holds 5 bytes, its shape 18"),
            std::string::npos)
      << cut.status();
}

}  // namespace
}  // namespace gradsync
