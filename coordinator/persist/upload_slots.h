// UploadSlots: how many uploads a store takes at once. Take() claims a
// slot or says RESOURCE_EXHAUSTED (naming the store's `kind` and the
// limit: "try again later"); Release() gives one back.
// Thread-safe.
#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {

class UploadSlots {
 public:
  UploadSlots(std::string kind, int max) : kind_(std::move(kind)), max_(max) {}

  absl::Status Take();
  void Release();

 private:
  const std::string kind_;
  const int max_;
  absl::Mutex mu_;
  int used_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gradsync
