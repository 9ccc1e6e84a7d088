#include "foundation/files/scratch_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<ScratchDirectory> ScratchDirectory::Create(
    absl::string_view tag) {
  for (char ch : tag) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '-' &&
        ch != '_') {
      return absl::InvalidArgumentError(
          absl::StrCat("scratch directory tag '", tag,
                       "' may hold only letters, digits, '-' and '_'"));
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string base = tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp";
  std::string name = absl::StrCat(base, "/gradsync-", tag, "-XXXXXX");
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot make a scratch directory ", name, ": ", std::strerror(errno)));
  }
  return ScratchDirectory(std::string(buffer.data()));
}

ScratchDirectory::ScratchDirectory(ScratchDirectory&& other) noexcept
    : path_(std::exchange(other.path_, "")) {}

ScratchDirectory& ScratchDirectory::operator=(
    ScratchDirectory&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, "");
  }
  return *this;
}

ScratchDirectory::~ScratchDirectory() { Remove(); }

void ScratchDirectory::Remove() {
  if (path_.empty()) return;
  std::error_code ignored;  // best effort: it lives under the temp directory
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace gradsync
