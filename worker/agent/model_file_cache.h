// ModelFileCache: the model files a worker fetched from the coordinator
// (JobSpec.model_file_sha256), kept by digest as <dir>/<sha256>.pt in a
// directory of mode 0700 that this user owns (FAILED_PRECONDITION
// otherwise); with no directory given, a private scratch directory that
// goes with the cache.
//
// Path() re-hashes a cached file on every use and downloads it again when
// it is missing or damaged (what `download` returns must hash to the
// digest, else DATA_LOSS); the trainer then checks the bytes it loads once
// more (TrainContext::verify_model_file), so what runs is what the user
// uploaded.
// Thread safety: one mutex serialises Path() calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "foundation/files/scratch_directory.h"

namespace gradsync {

class ModelFileCache {
 public:
  static absl::StatusOr<std::unique_ptr<ModelFileCache>> Open(
      const std::string& dir);

  absl::StatusOr<std::string> Path(
      const std::string& sha256,
      const std::function<absl::StatusOr<std::string>()>& download);

  const std::string& dir() const { return dir_; }
  // Files Path() downloaded so far (a file found intact is not counted).
  int64_t downloads() {
    absl::MutexLock lock(&mu_);
    return downloads_;
  }

 private:
  ModelFileCache(std::string dir, std::optional<ScratchDirectory> scratch)
      : scratch_(std::move(scratch)), dir_(std::move(dir)) {}

  std::optional<ScratchDirectory> scratch_;
  const std::string dir_;
  // Serialises Path(): two tasks fetching one digest download it once.
  absl::Mutex mu_;
  int64_t downloads_ ABSL_GUARDED_BY(mu_) = 0;
};

// OK when `bytes` hash to `sha256`; DATA_LOSS naming both digests.
absl::Status CheckModelFileDigest(absl::string_view bytes,
                                  const std::string& sha256);

}  // namespace gradsync
