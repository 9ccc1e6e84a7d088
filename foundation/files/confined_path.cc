#include "foundation/files/confined_path.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

// Absolute, with "..", "." and the existing parts' symlinks resolved.
bool Resolve(const std::string& path, fs::path* out) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) return false;
  *out = fs::weakly_canonical(absolute, ec).lexically_normal();
  return !ec;
}

}  // namespace

bool IsPathUnder(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (const fs::path& part : root) {
    if (part.empty()) continue;  // a trailing separator
    if (p == path.end() || *p != part) return false;
    ++p;
  }
  return true;
}

absl::Status CheckUnderRoots(const std::string& field, const std::string& path,
                             const std::vector<std::string>& roots,
                             const std::string& roots_name) {
  if (roots.empty()) return absl::OkStatus();
  fs::path resolved;
  if (!Resolve(path, &resolved)) {
    return absl::PermissionDeniedError(
        absl::StrCat(field, " ", path, " cannot be resolved"));
  }
  for (const std::string& root : roots) {
    fs::path resolved_root;
    if (!Resolve(root, &resolved_root)) {
      return absl::InvalidArgumentError(
          absl::StrCat("data root ", root, " cannot be resolved"));
    }
    if (IsPathUnder(resolved, resolved_root)) return absl::OkStatus();
  }
  // What it resolved to stays out of the message: it can name the
  // server's own files (/proc/self/fd/N is its database).
  return absl::PermissionDeniedError(
      absl::StrCat(field, " ", path, " is outside the ", roots_name, " (",
                   absl::StrJoin(roots, ", "), ")"));
}

absl::StatusOr<std::string> ResolveUnderRoot(const std::string& field,
                                             const std::string& path,
                                             const std::string& root,
                                             const std::string& roots_name) {
  if (path.empty()) return path;
  const fs::path p(path);
  const std::string joined =
      p.is_absolute() ? path : (fs::path(root) / p).lexically_normal().string();
  if (absl::Status s = CheckUnderRoots(field, joined, {root}, roots_name);
      !s.ok()) {
    return s;
  }
  return joined;
}

}  // namespace gradsync
