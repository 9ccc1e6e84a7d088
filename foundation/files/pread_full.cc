#include "foundation/files/pread_full.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status PreadFull(int fd, char* out, size_t n, int64_t offset) {
  for (size_t got = 0; got < n;) {
    const int64_t at = offset + static_cast<int64_t>(got);
    const ssize_t r = pread(fd, out + got, n - got, static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return absl::DataLossError(
          absl::StrCat("read at byte ", at, " failed: ", std::strerror(errno)));
    }
    if (r == 0) {
      return absl::DataLossError(absl::StrCat("file ends at byte ", at, ", ",
                                              n - got, " byte(s) short"));
    }
    got += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

}  // namespace gradsync
