// ModelFileStore: the TorchScript model files users upload (gradsync
// submit --model-file), kept by the coordinator so that workers fetch them
// by digest over gRPC, with no shared file system.
//
// Files are content-addressed under <dir>: <sha256>.pt, listed in
// index.tsv (digest, size, upload time, the uploader's file name),
// rewritten atomically and fsynced; a malformed line or a missing file is
// reported and skipped. Uploads are staged and checked as snapshots' are
// (staged_file.h: in order, size and SHA-256 proven before the file is
// visible, full disks refused up front as RESOURCE_EXHAUSTED); the same
// bytes uploaded twice are kept once. Reads check the checksum again
// (checked_read.h). Files are never removed behind a user's back: Delete()
// removes one only while no job refers to it.
//
// The store does not look inside the files: workers check a model file
// before it runs (worker/model/script_model.h).
// Thread-safe: one mutex guards the index; uploads run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/persist/staged_file.h"
#include "coordinator/persist/upload_slots.h"

namespace gradsync {

struct ModelFileInfo {
  std::string sha256;  // hex, lower case
  int64_t size = 0;    // bytes
  std::string name;    // the uploader's file name (display only)
  int64_t created_unix_ms = 0;
};

class ModelFileStore {
 public:
  // Creates `dir` (mode 0700) if needed and loads its index; stray
  // temporary files are removed.
  static absl::StatusOr<std::unique_ptr<ModelFileStore>> Open(
      const std::string& dir, int max_uploads = 4);

  // One upload in progress; destroying it before Commit() discards it.
  class Upload {
   public:
    ~Upload();
    absl::Status Append(int64_t offset, absl::string_view data);
    // Proves size and checksum, then makes the file visible (or finds it
    // already stored). INVALID_ARGUMENT when they do not match.
    absl::StatusOr<ModelFileInfo> Commit(const std::string& sha256);

   private:
    friend class ModelFileStore;
    Upload(ModelFileStore* store, ModelFileInfo info,
           std::unique_ptr<StagedFile> file)
        : store_(store), info_(std::move(info)), file_(std::move(file)) {}
    ModelFileStore* store_;
    ModelFileInfo info_;
    std::unique_ptr<StagedFile> file_;
  };

  // Starts an upload of `size` bytes named `name` (any path is cut to its
  // last component, control characters and tabs replaced).
  // INVALID_ARGUMENT for a size outside (0, max_bytes]; RESOURCE_EXHAUSTED
  // while `max_uploads` are in progress, or when the disk is full.
  absl::StatusOr<std::unique_ptr<Upload>> Begin(const std::string& name,
                                                int64_t size,
                                                int64_t max_bytes);

  // Oldest first.
  std::vector<ModelFileInfo> List();
  // INVALID_ARGUMENT for anything but 64 lower-case hex digits; NOT_FOUND
  // naming the digest when no such file is stored.
  absl::StatusOr<ModelFileInfo> Find(const std::string& sha256);
  // Removes a file. `referrer` names what still refers to the digest ("job
  // job-000003"; empty: nothing); while something does, FAILED_PRECONDITION
  // naming it.
  absl::Status Delete(
      const std::string& sha256,
      const std::function<std::string(const std::string& sha256)>& referrer);
  // A file's bytes, checked (checked_read.h).
  absl::Status ReadChunks(
      const ModelFileInfo& info, int64_t chunk_bytes,
      const std::function<bool(int64_t offset, absl::string_view data)>& chunk);
  std::string PathOf(const ModelFileInfo& info) const;

 private:
  ModelFileStore(std::string dir, int max_uploads)
      : dir_(std::move(dir)), slots_("model file", max_uploads) {}
  void LoadIndex() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteIndex() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ModelFileInfo> Publish(ModelFileInfo info,
                                        const std::string& staged);
  void EndUpload();

  const std::string dir_;
  UploadSlots slots_;
  absl::Mutex mu_;
  std::vector<ModelFileInfo> index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
