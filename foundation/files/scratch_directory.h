// ScratchDirectory: a fresh private directory for files a process needs for
// a while and nobody keeps (a job's final checkpoint on its way to the
// coordinator). Made by mkdtemp under the system's temporary directory
// ($TMPDIR, else /tmp) with mode 0700, so no other user's file or link can
// be in the way; removed, with everything in it, when the object goes.
// Thread safety: thread-compatible (one owner).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

class ScratchDirectory {
 public:
  // "<tmp>/gradsync-<tag>-XXXXXX"; `tag` may hold only letters, digits,
  // '-' and '_' (INVALID_ARGUMENT otherwise). FAILED_PRECONDITION naming
  // the directory when it cannot be made there.
  static absl::StatusOr<ScratchDirectory> Create(absl::string_view tag);

  ScratchDirectory(ScratchDirectory&& other) noexcept;
  ScratchDirectory& operator=(ScratchDirectory&& other) noexcept;
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  ~ScratchDirectory();

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDirectory(std::string path) : path_(std::move(path)) {}
  void Remove();

  std::string path_;  // "" once moved from
};

}  // namespace gradsync
