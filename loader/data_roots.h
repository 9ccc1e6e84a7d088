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
#include "loader/image_folder_index.h"

namespace gradsync {

// OK when `roots` is empty or `path` resolves under one of them; else
// PERMISSION_DENIED naming `field`, the path, what it resolved to and the
// roots. INVALID_ARGUMENT when a root itself cannot be resolved.
absl::Status CheckUnderDataRoots(const std::string& field,
                                 const std::string& path,
                                 const std::vector<std::string>& roots);

// CheckUnderDataRoots for `index.root` and every link in `index.links`
// (a class folder or image linked to /etc is refused by its path).
absl::Status CheckIndexUnderDataRoots(const std::string& field,
                                      const ImageFolderIndex& index,
                                      const std::vector<std::string>& roots);

}  // namespace gradsync
