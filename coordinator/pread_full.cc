#include "coordinator/pread_full.h"

#include <unistd.h>

namespace gradsync {

bool PreadFull(int fd, char* out, size_t n, int64_t offset) {
  for (size_t got = 0; got < n;) {
    const ssize_t r =
        pread(fd, out + got, n - got,
              static_cast<off_t>(offset + static_cast<int64_t>(got)));
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace gradsync
