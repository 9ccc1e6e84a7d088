// Confines an image-folder data set to a host's data roots: its root and
// every symbolic link its listing followed (a class folder or image linked
// to /etc is refused by its path). The rule itself is CheckUnderRoots
// (foundation/files/confined_path.h).
// Thread safety: pure functions (they read the file system).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "foundation/data_index/image_folder_index.h"

namespace gradsync {

// CheckUnderRoots for `index.root` and every link in `index.links`.
absl::Status CheckIndexUnderDataRoots(const std::string& field,
                                      const ImageFolderIndex& index,
                                      const std::vector<std::string>& roots);

}  // namespace gradsync
