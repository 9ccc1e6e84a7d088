// Confines the paths a job spec names to the coordinator's data roots.
//
// With roots configured (gradsync-coordinator --data-root, repeatable, or
// GRADSYNC_DATA_ROOTS=a,b), a dataset path must resolve - relative to the
// coordinator's working directory, through "..", "." and symbolic links of
// the parts that exist - to a root or something below it, compared path
// component by component (/data2 is not under /data). No roots: any path.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gradsync {

// OK when `roots` is empty or `path` resolves under one of them; else
// PERMISSION_DENIED naming `field`, the path, what it resolved to and the
// roots. INVALID_ARGUMENT when a root itself cannot be resolved.
absl::Status CheckUnderDataRoots(const std::string& field,
                                 const std::string& path,
                                 const std::vector<std::string>& roots);

}  // namespace gradsync
