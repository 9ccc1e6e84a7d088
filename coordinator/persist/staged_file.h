// StagedFile: one upload into a content-addressed store (snapshots,
// model files), staged in a temporary file until its checksum is proven.
//
// Create() makes <dir>/<prefix><pid>-<n> afresh (O_EXCL, never through a
// link, mode 0600) and reserves the declared size at once, so a full disk
// refuses the upload before its bytes are sent. Append() takes the bytes
// in order; Finish() checks that all declared bytes came and that their
// SHA-256 is the one the uploader sent, fsyncs, and leaves the file for the
// store to rename into place. Any failure, or destroying the object before
// Finish(), removes the file: a half-sent or corrupt upload never becomes
// visible.
//
// Storage failures (a full disk, a write error) are RESOURCE_EXHAUSTED or
// INTERNAL, naming `what` ("the snapshot of job-000001 step 40") and the
// store's `kind` ("snapshot", "model file") but never a path of the
// coordinator's; IsStorageError() tells them from refusals of what the
// uploader sent (INVALID_ARGUMENT).
// Thread safety: one object per upload, used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/wire/sha256.h"

namespace gradsync {

// A storage failure of `kind`'s store while storing `what` (errno `err`).
absl::Status StorageError(absl::string_view kind, absl::string_view what,
                          int err);
bool IsStorageError(const absl::Status& status);

// Removes the staged files under `dir` whose names start with `prefix`:
// uploads that were in flight when the process stopped.
void RemoveStagedFiles(const std::string& dir, absl::string_view prefix);

class StagedFile {
 public:
  static absl::StatusOr<std::unique_ptr<StagedFile>> Create(
      const std::string& dir, absl::string_view prefix, int64_t size,
      std::string kind, std::string what);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  // `data` at byte `offset`: INVALID_ARGUMENT unless it follows the
  // previous piece and ends within the declared size.
  absl::Status Append(int64_t offset, absl::string_view data);
  // INVALID_ARGUMENT when bytes are missing or `sha256` is not theirs.
  absl::Status Finish(const std::string& sha256);
  // The staged file; after a successful Finish() it is the caller's to
  // rename (or remove).
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return digest_; }
  // Removes the staged file (also after Finish()).
  void Discard();

 private:
  StagedFile(std::string path, int fd, int64_t size, std::string kind,
             std::string what);

  std::string path_;
  int fd_;
  const int64_t size_;
  const std::string kind_, what_;
  Sha256 hash_;
  int64_t written_ = 0;
  std::string digest_;
  bool finished_ = false;
};

}  // namespace gradsync
