#include "foundation/data_index/image_folder_index.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"

namespace gradsync {
namespace {
namespace fs = std::filesystem;

class ImageFolderIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gradsync_if_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Touch(const std::string& rel) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << "x";
  }
  fs::path root_;
};

TEST_F(ImageFolderIndexTest, ListsLikeTorchvisionImageFolder) {
  Touch("cat/b.png");
  Touch("cat/a.JPG");
  Touch("cat/notes.txt");
  Touch("cat/sub/c.png");
  Touch("ant/z.jpeg");
  auto index = ScanImageFolder(root_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->classes, (std::vector<std::string>{"ant", "cat"}));
  ASSERT_EQ(index->samples.size(), 4u);
  EXPECT_EQ(index->samples[0].path, (root_ / "ant/z.jpeg").string());
  EXPECT_EQ(index->samples[0].label, 0);
  EXPECT_EQ(index->samples[1].path, (root_ / "cat/a.JPG").string());
  EXPECT_EQ(index->samples[2].path, (root_ / "cat/b.png").string());
  EXPECT_EQ(index->samples[3].path, (root_ / "cat/sub/c.png").string());
  EXPECT_EQ(index->samples[3].label, 1);
}

TEST_F(ImageFolderIndexTest, MissingFolderIsNotFound) {
  auto index = ScanImageFolder((root_ / "nope").string());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(index.status().message().find("nope"), std::string::npos);
}

TEST_F(ImageFolderIndexTest, EmptyClassIsNamed) {
  Touch("full/a.png");
  fs::create_directories(root_ / "empty");
  Touch("empty/readme.txt");
  auto index = ScanImageFolder(root_.string());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(index.status().message().find("empty"), std::string::npos);
}

// Finding (issue 39): links c0/a -> . and c0/b -> . kept the coordinator
// scanning for ever, growing by hundreds of MB. A folder reached twice is
// refused, naming the link; a link to a folder elsewhere still counts.
TEST_F(ImageFolderIndexTest, ASymlinkLoopIsRefusedNotScannedForEver) {
  Touch("c0/x.png");
  Touch("c1/y.png");
  fs::create_directory_symlink(".", root_ / "c0" / "a");
  fs::create_directory_symlink(".", root_ / "c0" / "b");
  auto index = ScanImageFolder(root_.string());
  ASSERT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(index.status().message().find("symbolic link loop"),
            std::string::npos)
      << index.status();
  // One of the two links (directory order decides which).
  EXPECT_TRUE(index.status().message().find("/c0/a leads") !=
                  std::string::npos ||
              index.status().message().find("/c0/b leads") != std::string::npos)
      << index.status();
  // Without the loop, a linked folder elsewhere is followed as before.
  fs::remove(root_ / "c0" / "a");
  fs::remove(root_ / "c0" / "b");
  Touch("../gradsync_if_elsewhere_" + std::to_string(::getpid()) + "/z.png");
  const fs::path elsewhere = root_.parent_path() / ("gradsync_if_elsewhere_" +
                                                    std::to_string(::getpid()));
  fs::create_directory_symlink(elsewhere, root_ / "c1" / "more");
  index = ScanImageFolder(root_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->samples.size(), 3u);
  fs::remove_all(elsewhere);
}

// Finding (issue 39, 4): a scan outlived the client's timeout and held up
// the coordinator's shutdown. It stops when its budget says so: the caller
// gave up (CANCELLED) or its deadline passed (DEADLINE_EXCEEDED), naming
// the folder; an unlimited budget scans as before.
TEST_F(ImageFolderIndexTest, AScanStopsWhenItsCallerGivesUpOrItsTimeRunsOut) {
  for (int i = 0; i < 3000; ++i) Touch("c0/" + std::to_string(i) + ".png");
  int asked = 0;
  ScanBudget gave_up;
  gave_up.cancelled = [&asked] { return ++asked > 1; };
  auto index = ScanImageFolder(root_.string(), gave_up);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kCancelled)
      << index.status();
  EXPECT_NE(index.status().message().find(root_.string() + "/c0"),
            std::string::npos)
      << index.status();
  EXPECT_EQ(asked, 2);  // asked once per 1,024 entries, stopped at once
  ScanBudget late;
  late.deadline = absl::Now() - absl::Seconds(1);
  index = ScanImageFolder(root_.string(), late);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kDeadlineExceeded)
      << index.status();
  index = ScanImageFolder(root_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->samples.size(), 3000u);
}

TEST_F(ImageFolderIndexTest, NoClassFoldersIsInvalid) {
  Touch("a.png");
  auto index = ScanImageFolder(root_.string());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitPathTest, JoinsOptionalSplit) {
  EXPECT_EQ(SplitPath("/d", ""), "/d");
  EXPECT_EQ(SplitPath("/d", "train"), "/d/train");
}

}  // namespace
}  // namespace gradsync
