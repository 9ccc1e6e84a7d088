#include "foundation/files/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status WriteNewFile(const std::string& path, absl::string_view bytes,
                          mode_t mode, bool replace) {
  if (replace && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::DataLossError(
        absl::StrCat("cannot replace ", path, ": ", std::strerror(errno)));
  }
  const int fd = ::open(
      path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    const std::string why = std::strerror(errno);
    if (errno == EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", path, ": it already exists"));
    }
    return absl::DataLossError(absl::StrCat("cannot create ", path, ": ", why));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return absl::DataLossError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status ReplaceFileDurably(const std::string& path,
                                absl::string_view bytes, mode_t mode) {
  const std::string tmp = path + ".tmp";
  if (absl::Status s = WriteNewFile(tmp, bytes, mode, /*replace=*/true);
      !s.ok()) {
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return absl::DataLossError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", why));
  }
  const size_t slash = path.rfind('/');
  SyncDirectory(slash == std::string::npos ? "." : path.substr(0, slash));
  return absl::OkStatus();
}

void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "/" : dir.c_str(),
                        O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

}  // namespace gradsync
