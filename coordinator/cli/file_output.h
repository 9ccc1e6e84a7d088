// Files the CLI writes (model snapshots, plots): whole or not at all.
// Thread-compatible.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync::cli {

// Writes `data` to `path` through a temporary file beside it (path +
// ".part") renamed into place, so a reader never sees half a file.
// INTERNAL naming the path when either step fails (nothing is left).
absl::Status WriteWholeFile(const std::string& path, absl::string_view data);

}  // namespace gradsync::cli
