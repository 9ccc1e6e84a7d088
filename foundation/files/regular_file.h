// RegularFile: a file opened for reading only once it is known to be a
// regular file, the one way the project opens files a user names (images,
// shards, tensor files, model files, checkpoints). Opening never waits: a
// FIFO opened for reading would wait for a writer, so the open is
// non-blocking and anything but a regular file (FIFO, device, socket,
// directory) is refused by path before a byte is read.
// Thread safety: fd() may be read with pread(2) from any thread; move-only,
// the descriptor closes with the object.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// st_mtim in nanoseconds, to compare a file with what it was at Open.
inline int64_t ModificationTimeNs(const struct stat& info) {
  return int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
}

class RegularFile {
 public:
  // `what` names the kind of file in messages ("image", "shard"; empty for
  // none). NOT_FOUND when `path` or a directory on it does not exist,
  // FAILED_PRECONDITION when it is not a regular file or cannot be opened
  // (the errno text), each naming the path.
  static absl::StatusOr<RegularFile> Open(const std::string& path,
                                          absl::string_view what = "");

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Size and modification time as fstat(2) saw them at Open.
  int64_t size() const { return info_.st_size; }
  int64_t mtime_ns() const { return ModificationTimeNs(info_); }

  // The first size() bytes into `out` (which holds that many); DATA_LOSS
  // naming the path when the file is shorter now or a read fails.
  absl::Status ReadAll(char* out) const;

 private:
  RegularFile(int fd, std::string path, const struct stat& info)
      : fd_(fd), path_(std::move(path)), info_(info) {}
  int fd_ = -1;
  std::string path_;
  struct stat info_ = {};
};

}  // namespace gradsync
