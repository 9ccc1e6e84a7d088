// Confines a path to a set of roots, the rule behind a host's data roots
// (`--data-root`, GRADSYNC_DATA_ROOTS: the coordinator scans a data set,
// each worker opens its files) and a worker's checkpoint root.
//
// With roots configured, a path must resolve - relative to the working
// directory, through "..", "." and symbolic links of the parts that exist -
// to a root or something below it, compared path component by component
// (/data2 is not under /data). No roots: any path.
// Thread safety: pure functions (they read the file system).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {

// Whether `path` is `root` or below it, component by component, as
// written (no resolution; normalize both first).
bool IsPathUnder(const std::filesystem::path& path,
                 const std::filesystem::path& root);

// OK when `roots` is empty or `path` resolves under one of them; else
// PERMISSION_DENIED naming `field`, the path as given (never what it
// resolved to, which may be the server's own file) and the roots (called
// `roots_name`). INVALID_ARGUMENT when a root itself cannot be
// resolved.
absl::Status CheckUnderRoots(const std::string& field, const std::string& path,
                             const std::vector<std::string>& roots,
                             const std::string& roots_name = "data roots");

// A path a job names on a worker that confines it to `root` (a worker's
// checkpoint root): relative paths are taken under `root`, absolute ones
// must resolve under it (CheckUnderRoots). "" stays "". Returns the path to
// use.
absl::StatusOr<std::string> ResolveUnderRoot(const std::string& field,
                                             const std::string& path,
                                             const std::string& root,
                                             const std::string& roots_name);

}  // namespace gradsync
