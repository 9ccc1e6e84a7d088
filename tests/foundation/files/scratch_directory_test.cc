// ScratchDirectory: private, fresh, and gone with its contents when its
// owner is; a hostile tag cannot steer it elsewhere.
#include "foundation/files/scratch_directory.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace gradsync {
namespace {

namespace fs = std::filesystem;

TEST(ScratchDirectoryTest, PrivateFreshAndRemovedWithItsContents) {
  std::string path;
  {
    absl::StatusOr<ScratchDirectory> a = ScratchDirectory::Create("job-1_r0");
    absl::StatusOr<ScratchDirectory> b = ScratchDirectory::Create("job-1_r0");
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_NE(a->path(), b->path());
    path = a->path();
    EXPECT_NE(path.find("/gradsync-job-1_r0-"), std::string::npos) << path;
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700);
    fs::create_directories(path + "/sub");
    std::ofstream(path + "/sub/model.pt") << "weights";
    // A moved-from directory leaves the removal to its new owner.
    ScratchDirectory moved = std::move(*a);
    EXPECT_TRUE(fs::exists(path + "/sub/model.pt"));
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(ScratchDirectoryTest, TagsThatCouldLeaveTheTempDirectoryAreRefused) {
  for (const char* tag : {"../etc", "a/b", "x y"}) {
    EXPECT_EQ(ScratchDirectory::Create(tag).status().code(),
              absl::StatusCode::kInvalidArgument)
        << tag;
  }
  EXPECT_TRUE(ScratchDirectory::Create("").ok());
}

TEST(ScratchDirectoryTest, AnUnusableTempDirectoryIsNamed) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", "/nonexistent/gradsync-tmp", 1);
  absl::StatusOr<ScratchDirectory> d = ScratchDirectory::Create("t");
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(d.status().message().find("/nonexistent/gradsync-tmp"),
            std::string::npos)
      << d.status();
}

}  // namespace
}  // namespace gradsync
