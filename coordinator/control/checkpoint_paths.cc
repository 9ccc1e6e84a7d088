#include "coordinator/control/checkpoint_paths.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "foundation/files/confined_path.h"

namespace gradsync {
namespace fs = std::filesystem;

absl::Status CheckCheckpointPaths(
    const v1::JobSpec& spec, const std::vector<std::string>& worker_roots) {
  const bool roots_known =
      !worker_roots.empty() &&
      std::none_of(worker_roots.begin(), worker_roots.end(),
                   [](const std::string& r) { return r.empty(); });
  const std::set<std::string> roots(worker_roots.begin(), worker_roots.end());
  for (const auto& [field, value] :
       {std::pair{"checkpoint.directory", &spec.checkpoint().directory()},
        std::pair{"checkpoint.resume_from",
                  &spec.checkpoint().resume_from()}}) {
    if (value->empty()) continue;
    const fs::path path = fs::path(*value).lexically_normal();
    if (path.is_relative()) {
      if (!path.empty() && *path.begin() == "..") {
        return absl::InvalidArgumentError(absl::StrCat(
            field, " ", *value,
            " climbs out of the worker's checkpoint root: a relative path is "
            "taken under each worker's --checkpoint-root"));
      }
      continue;
    }
    if (!roots_known) continue;
    const bool inside_one =
        std::any_of(roots.begin(), roots.end(), [&](const std::string& r) {
          return IsPathUnder(path, fs::path(r).lexically_normal());
        });
    if (!inside_one) {
      return absl::FailedPreconditionError(absl::StrCat(
          field, " ", *value,
          " is outside every registered worker's checkpoint root (",
          absl::StrJoin(roots, ", "),
          "): give a path relative to the root (taken under each worker's "
          "--checkpoint-root), or start the workers with a root that holds "
          "it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
