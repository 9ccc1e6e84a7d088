#include "foundation/files/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "foundation/files/regular_file.h"

namespace gradsync {

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path);
  if (!file.ok()) return file.status();
  const auto size = static_cast<size_t>(file->size());
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file->fd(), 0);
    if (data == MAP_FAILED) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot map ", path, ": ", std::strerror(errno)));
    }
  }
  return MappedFile(data, size);  // the mapping outlives the descriptor
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace gradsync
