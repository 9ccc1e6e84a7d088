// Confines the paths a job spec names to a host's data roots: the
// coordinator's (it scans the data set) and each worker's (it opens the
// files), both `--data-root` (repeatable) or GRADSYNC_DATA_ROOTS=a,b.
//
// With roots configured, a path must resolve - relative to the working
// directory, through "..", "." and symbolic links of the parts that exist -
// to a root or something below it, compared path component by component
// (/data2 is not under /data); so must every symbolic link a data set's
// listing followed. No roots: any path.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "loader/image_folder_index.h"

namespace gradsync {

// OK when `roots` is empty or `path` resolves under one of them; else
// PERMISSION_DENIED naming `field`, the path, what it resolved to and the
// roots (called `roots_name`). INVALID_ARGUMENT when a root itself cannot be
// resolved.
absl::Status CheckUnderDataRoots(const std::string& field,
                                 const std::string& path,
                                 const std::vector<std::string>& roots,
                                 const std::string& roots_name = "data roots");

// A path a job names on a worker that confines it to `root` (a worker's
// checkpoint root): relative paths are taken under `root`, absolute ones
// must resolve under it (CheckUnderDataRoots). "" stays "". Returns the
// path to use.
absl::StatusOr<std::string> ResolveUnderRoot(const std::string& field,
                                             const std::string& path,
                                             const std::string& root,
                                             const std::string& roots_name);

// CheckUnderDataRoots for `index.root` and every link in `index.links`
// (a class folder or image linked to /etc is refused by its path).
absl::Status CheckIndexUnderDataRoots(const std::string& field,
                                      const ImageFolderIndex& index,
                                      const std::vector<std::string>& roots);

}  // namespace gradsync
