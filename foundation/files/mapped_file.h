// MappedFile: a regular file mapped read-only into memory, so a reader can
// look at a few of its bytes (a zip's directory, a pickle) without reading
// the rest, and copy the parts it needs without a second buffer.
//
// The mapping is private and read-only; the file changing under it is the
// writer's business (a reader verifies checksums where it matters).
// Thread safety: bytes() may be read from any thread; move-only.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

class MappedFile {
 public:
  // Opened as RegularFile::Open (never waiting on a FIFO): NOT_FOUND when
  // `path` does not exist, FAILED_PRECONDITION when it is not a regular
  // file or cannot be read or mapped, each naming the path.
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  absl::string_view bytes() const {
    return {static_cast<const char*>(data_), size_};
  }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

}  // namespace gradsync
