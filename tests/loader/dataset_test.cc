// OpenDataset on a worker with data roots (gradsync-worker --data-root): the
// worker opens the files, so it refuses a split or a link inside the data
// set that resolves outside its roots, as the coordinator does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "loader/open_dataset.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  std::string dir =
      (fs::temp_directory_path() / absl::StrCat("dataset_test_", ::getpid()))
          .string();
  fs::remove_all(dir);
  return dir;
}

void MakeClass(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream(dir + "/0.png") << "png";
}

TEST(DatasetTest, WorkerDataRootsRefuseLinksAndSplitsOutside) {
  const std::string base = TempDir();
  const std::vector<std::string> roots = {base + "/data"};
  MakeClass(base + "/data/set/train/a");
  MakeClass(base + "/secret/b");
  auto ok = OpenDataset(base + "/data/set", "train", 0, {roots, {}, nullptr});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->size(), 1);

  auto outside = OpenDataset(base + "/secret", "", 0, {roots, {}, nullptr});
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kPermissionDenied);

  fs::create_directory_symlink(base + "/secret/b", base + "/data/set/train/b");
  auto linked =
      OpenDataset(base + "/data/set", "train", 0, {roots, {}, nullptr});
  EXPECT_EQ(linked.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(linked.status().message().find(base + "/data/set/train/b"),
            std::string::npos)
      << linked.status();
  // Without roots the worker takes any path, as before.
  auto anywhere = OpenDataset(base + "/data/set", "train", 0);
  ASSERT_TRUE(anywhere.ok()) << anywhere.status();
  EXPECT_EQ((*anywhere)->size(), 2);
  fs::remove_all(base);
}

}  // namespace
}  // namespace gradsync
