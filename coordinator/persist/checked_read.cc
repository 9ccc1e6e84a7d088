#include "coordinator/persist/checked_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "coordinator/wire/sha256.h"
#include "foundation/files/pread_full.h"

namespace gradsync {

absl::Status ReadCheckedChunks(
    const std::string& path, int64_t size, const std::string& sha256,
    int64_t chunk_bytes, absl::string_view kind,
    const std::function<bool(int64_t offset, absl::string_view data)>& chunk) {
  auto damaged = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat(kind, " file ", path, " ", what, "; not served"));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return damaged("is missing");
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size != size) {
    close(fd);
    return damaged(absl::StrCat("is not ", size, " bytes long"));
  }
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::string buffer(static_cast<size_t>(std::clamp<int64_t>(
                         chunk_bytes, 1, std::max<int64_t>(1, size))),
                     '\0');
  Sha256 hash;
  absl::Status status;
  int64_t offset = 0;
  do {
    const size_t want = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(buffer.size()), size - offset));
    if (absl::Status read = PreadFull(fd, buffer.data(), want, offset);
        !read.ok()) {
      status = damaged(
          absl::StrCat("could not be read to its end (", read.message(), ")"));
      break;
    }
    const absl::string_view piece(buffer.data(), want);
    hash.Update(piece);
    // The last piece goes out only once the whole file checked out.
    if (offset + static_cast<int64_t>(want) == size &&
        hash.HexDigest() != sha256) {
      status = damaged("is corrupt (its checksum differs from the upload's)");
      break;
    }
    if (!chunk(offset, piece)) {
      status = absl::CancelledError(
          absl::StrCat("the ", kind, "'s reader went away"));
      break;
    }
    offset += static_cast<int64_t>(want);
  } while (offset < size);
  close(fd);
  return status;
}

}  // namespace gradsync
