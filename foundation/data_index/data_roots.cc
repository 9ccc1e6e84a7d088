#include "foundation/data_index/data_roots.h"

#include "absl/strings/str_cat.h"
#include "foundation/files/confined_path.h"

namespace gradsync {

absl::Status CheckIndexUnderDataRoots(const std::string& field,
                                      const ImageFolderIndex& index,
                                      const std::vector<std::string>& roots) {
  if (roots.empty()) return absl::OkStatus();
  if (absl::Status s = CheckUnderRoots(field, index.root, roots); !s.ok()) {
    return s;
  }
  for (const std::string& link : index.links) {
    if (absl::Status s =
            CheckUnderRoots(absl::StrCat(field, ": the link"), link, roots);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
