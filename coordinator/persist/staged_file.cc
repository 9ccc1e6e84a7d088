#include "coordinator/persist/staged_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

constexpr char kStoragePayload[] = "gradsync/content-storage";

}  // namespace

absl::Status StorageError(absl::string_view kind, absl::string_view what,
                          int err) {
  absl::Status s =
      err == ENOSPC || err == EDQUOT
          ? absl::ResourceExhaustedError(absl::StrCat(
                "the coordinator's ", kind, " storage is full (",
                std::strerror(err), "): ", what, " was not stored"))
          : absl::InternalError(absl::StrCat("the coordinator cannot store ",
                                             what, ": ", std::strerror(err)));
  s.SetPayload(kStoragePayload, absl::Cord("1"));
  return s;
}

bool IsStorageError(const absl::Status& status) {
  return status.GetPayload(kStoragePayload).has_value();
}

void RemoveStagedFiles(const std::string& dir, absl::string_view prefix) {
  std::error_code ec;
  for (const std::filesystem::directory_entry& e :
       std::filesystem::directory_iterator(dir, ec)) {
    if (absl::StartsWith(e.path().filename().string(), prefix)) {
      std::filesystem::remove(e.path(), ec);
    }
  }
}

absl::StatusOr<std::unique_ptr<StagedFile>> StagedFile::Create(
    const std::string& dir, absl::string_view prefix, int64_t size,
    std::string kind, std::string what) {
  static std::atomic<int64_t> next{0};
  const std::string path =
      absl::StrCat(dir, "/", prefix, getpid(), "-", next++);
  const int fd = open(
      path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return StorageError(kind, what, errno);
  // Reserve the space now (file systems without fallocate find out on
  // write).
  if (fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0 &&
      (errno == ENOSPC || errno == EDQUOT)) {
    const int err = errno;
    close(fd);
    std::remove(path.c_str());
    return StorageError(kind, what, err);
  }
  return std::unique_ptr<StagedFile>(
      new StagedFile(path, fd, size, std::move(kind), std::move(what)));
}

StagedFile::StagedFile(std::string path, int fd, int64_t size, std::string kind,
                       std::string what)
    : path_(std::move(path)),
      fd_(fd),
      size_(size),
      kind_(std::move(kind)),
      what_(std::move(what)) {}

StagedFile::~StagedFile() {
  if (!finished_) Discard();
  if (fd_ >= 0) close(fd_);
}

void StagedFile::Discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!path_.empty()) std::remove(path_.c_str());
  path_.clear();
}

absl::Status StagedFile::Append(int64_t offset, absl::string_view data) {
  if (fd_ < 0 || finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind_, " upload already finished"));
  }
  if (offset != written_) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind_, " upload: chunk at byte ", offset, ", expected byte ", written_,
        " (chunks must come in order)"));
  }
  if (written_ + static_cast<int64_t>(data.size()) > size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind_, " upload: chunk ends at byte ", written_ + data.size(),
        ", past the declared size ", size_));
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      Discard();
      return StorageError(kind_, what_, err);
    }
    done += static_cast<size_t>(n);
  }
  // Start writing this piece to disk now, so that Finish()'s fsync waits
  // for the last pieces only instead of the whole file.
  (void)sync_file_range(fd_, written_, static_cast<off_t>(data.size()),
                        SYNC_FILE_RANGE_WRITE);
  hash_.Update(data);
  written_ += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::Status StagedFile::Finish(const std::string& sha256) {
  if (fd_ < 0 || finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat(kind_, " upload already finished"));
  }
  if (written_ != size_) {
    const int64_t got = written_;
    Discard();
    return absl::InvalidArgumentError(
        absl::StrCat(kind_, " upload: ", got, " of ", size_, " bytes arrived"));
  }
  const int synced = fsync(fd_) == 0 ? 0 : errno;
  close(fd_);
  fd_ = -1;
  if (synced != 0) {
    Discard();
    return StorageError(kind_, what_, synced);
  }
  digest_ = hash_.HexDigest();
  if (digest_ != sha256) {
    Discard();
    return absl::InvalidArgumentError(
        absl::StrCat(kind_, " upload: checksum mismatch (sent ", sha256,
                     ", received ", digest_, ")"));
  }
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace gradsync
