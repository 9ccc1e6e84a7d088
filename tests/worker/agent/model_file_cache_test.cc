// ModelFileCache: a model file is downloaded once and found again by
// digest; a cached file that was damaged is downloaded again; bytes that do
// not hash to the digest are refused (DATA_LOSS) and not kept; a cache
// directory is made private, and one another user could write is refused.
#include "worker/agent/model_file_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator/wire/sha256.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class ModelFileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("model_file_cache_test_" + std::to_string(getpid())))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  const std::string bytes_ = std::string(4000, 'm');
  const std::string sha_ = Sha256Hex(bytes_);
};

TEST_F(ModelFileCacheTest, DownloadsOnceAndAgainWhenDamaged) {
  auto cache = ModelFileCache::Open(dir_);
  ASSERT_TRUE(cache.ok()) << cache.status();
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto fetch = [this]() -> absl::StatusOr<std::string> { return bytes_; };
  auto path = (*cache)->Path(sha_, fetch);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, dir_ + "/" + sha_ + ".pt");
  ASSERT_TRUE((*cache)->Path(sha_, fetch).ok());
  EXPECT_EQ((*cache)->downloads(), 1);
  std::ofstream(*path, std::ios::trunc) << "tampered";
  ASSERT_TRUE((*cache)->Path(sha_, fetch).ok());
  EXPECT_EQ((*cache)->downloads(), 2);
  std::ifstream in(*path);
  std::string kept((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(kept, bytes_);
}

TEST_F(ModelFileCacheTest, BytesOfAnotherDigestAreRefused) {
  auto cache = ModelFileCache::Open("");  // a private scratch directory
  ASSERT_TRUE(cache.ok()) << cache.status();
  auto path = (*cache)->Path(
      sha_, []() -> absl::StatusOr<std::string> { return "something else"; });
  EXPECT_EQ(path.status().code(), absl::StatusCode::kDataLoss) << path.status();
  EXPECT_FALSE(fs::exists((*cache)->dir() + "/" + sha_ + ".pt"));
  EXPECT_EQ(
      (*cache)
          ->Path("../../x",
                 []() -> absl::StatusOr<std::string> { return std::string(); })
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
