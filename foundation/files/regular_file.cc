#include "foundation/files/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "foundation/files/pread_full.h"

namespace gradsync {

absl::StatusOr<RegularFile> RegularFile::Open(const std::string& path,
                                              absl::string_view what) {
  const std::string named = what.empty() ? path : absl::StrCat(what, " ", path);
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer. It
  // changes nothing for a regular file's reads.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string why =
        absl::StrCat("cannot open ", named, ": ", std::strerror(error));
    return error == ENOENT || error == ENOTDIR
               ? absl::NotFoundError(why)
               : absl::FailedPreconditionError(why);
  }
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(named, " is not a regular file"));
  }
  return RegularFile(fd, path, info);
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      info_(other.info_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    info_ = other.info_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RegularFile::ReadAll(char* out) const {
  if (absl::Status s = PreadFull(fd_, out, static_cast<size_t>(size()), 0);
      !s.ok()) {
    return absl::DataLossError(
        absl::StrCat("cannot read ", path_, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
