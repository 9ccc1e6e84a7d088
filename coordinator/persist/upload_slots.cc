#include "coordinator/persist/upload_slots.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status UploadSlots::Take() {
  absl::MutexLock lock(&mu_);
  if (used_ >= max_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(kind_, " upload: ", used_,
                     " uploads are in progress, the most this coordinator "
                     "takes at once; try again later"));
  }
  ++used_;
  return absl::OkStatus();
}

void UploadSlots::Release() {
  absl::MutexLock lock(&mu_);
  --used_;
}

}  // namespace gradsync
