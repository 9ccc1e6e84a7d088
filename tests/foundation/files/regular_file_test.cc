// RegularFile and MappedFile: only regular files are opened, and opening a
// FIFO returns at once (it once hung the coordinator's submit on a FIFO
// named train.pt); the status says which path and why; reads notice a
// file cut short after it was opened.
#include "foundation/files/regular_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "foundation/files/mapped_file.h"
#include "foundation/files/scratch_directory.h"
#include "tests/fakes/fifo_reader.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ScratchDirectory> dir =
        ScratchDirectory::Create("regular_file_test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(std::move(*dir));
  }

  std::string Path(const std::string& name) const {
    return dir_->path() + "/" + name;
  }

  std::optional<ScratchDirectory> dir_;
};

void ExpectRefused(const absl::Status& status, absl::StatusCode code,
                   const std::string& says) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find(says), std::string::npos) << status;
}

TEST_F(RegularFileTest, ReadsARegularFileWhole) {
  const std::string path = Path("train.pt");
  std::ofstream(path, std::ios::binary) << "twelve bytes";
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, "tensor file");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->size(), 12);
  EXPECT_GT(file->mtime_ns(), 0);
  std::string bytes(12, '\0');
  ASSERT_TRUE(file->ReadAll(bytes.data()).ok());
  EXPECT_EQ(bytes, "twelve bytes");

  // A move hands the descriptor over; it closes once, with its last owner.
  const int fd = file->fd();
  {
    RegularFile moved = std::move(*file);
    EXPECT_EQ(moved.fd(), fd);
    EXPECT_NE(::fcntl(fd, F_GETFD), -1);
  }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);

  absl::StatusOr<MappedFile> mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->bytes(), "twelve bytes");
}

TEST_F(RegularFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = Path("train.pt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(
      ReadWithoutWaiting(fifo, [&] { return RegularFile::Open(fifo, "shard"); })
          .status(),
      absl::StatusCode::kFailedPrecondition,
      "shard " + fifo + " is not a regular file");
  ExpectRefused(
      ReadWithoutWaiting(fifo, [&] { return MappedFile::Open(fifo); }).status(),
      absl::StatusCode::kFailedPrecondition, fifo + " is not a regular file");
}

TEST_F(RegularFileTest, MissingPathsAndDirectoriesAreNamed) {
  const std::string missing = Path("missing.pt");
  ExpectRefused(RegularFile::Open(missing).status(),
                absl::StatusCode::kNotFound, "cannot open " + missing);
  // A path through a file (ENOTDIR) does not exist either.
  const std::string file = Path("file");
  std::ofstream(file) << "x";
  ExpectRefused(RegularFile::Open(file + "/x").status(),
                absl::StatusCode::kNotFound, file + "/x");
  ExpectRefused(RegularFile::Open(dir_->path(), "image").status(),
                absl::StatusCode::kFailedPrecondition,
                "image " + dir_->path() + " is not a regular file");
  ExpectRefused(MappedFile::Open(missing).status(), absl::StatusCode::kNotFound,
                missing);
}

TEST_F(RegularFileTest, AFileCutShortAfterOpenIsDataLoss) {
  const std::string path = Path("shrinks.tar");
  std::ofstream(path, std::ios::binary) << std::string(4096, 'x');
  absl::StatusOr<RegularFile> file = RegularFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  fs::resize_file(path, 100);
  std::string bytes(4096, '\0');
  ExpectRefused(file->ReadAll(bytes.data()), absl::StatusCode::kDataLoss,
                "cannot read " + path + ": file ends at byte 100");
}

}  // namespace
}  // namespace gradsync
