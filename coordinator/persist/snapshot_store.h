// SnapshotStore: model snapshots kept by the coordinator (issue 7), so that
// hosts need no shared file system for checkpoints.
//
// Files are content-addressed under <dir>: <sha256>.pt holds a checkpoint's
// bytes (worker/model/checkpoint.h's format), index.tsv lists which job's
// step each one is, and pins.tsv the pins and deleted jobs (below); both are
// rewritten atomically and fsynced. A malformed line is reported and
// skipped, never fatal. An upload streams into a temporary
// file in order; Commit() checks its size and SHA-256 against what the uploader
// declared and only then renames it into place and indexes it, so a
// half-sent or corrupted upload never becomes visible, and an abandoned one
// leaves nothing behind. Reads verify the checksum again: a snapshot damaged
// on disk is reported (DATA_LOSS naming the file), never served.
//
// Retention per job: the newest `keep_last` snapshots and the one with the
// best evaluation accuracy; older ones are dropped at each commit (a file
// goes when no index entry names it any more). A snapshot that another job
// starts from (--resume-snapshot) is pinned by that job and survives
// retention, and its own job's deletion, until the pinning job has a
// snapshot of its own or is deleted. Re-uploading a (job, step) replaces
// the entry and its file. At most `max_uploads` uploads run at once.
//
// Thread-safe: one mutex guards the index; uploads run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
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

struct SnapshotInfo {
  std::string job_id;
  int64_t step = 0;
  int32_t epoch = 0;  // where a resume starts (SnapshotMeta)
  int64_t epoch_batch = 0;
  double accuracy = -1;  // evaluation accuracy at the snapshot; -1 = none
  int64_t size = 0;      // bytes
  std::string sha256;    // hex, lower case
  int64_t created_unix_ms = 0;
};

struct SnapshotRetention {
  int keep_last = 3;      // >= 1
  bool keep_best = true;  // also the best accuracy, however old
};

class SnapshotStore {
 public:
  // Creates `dir` if needed and loads its index; index entries whose file is
  // missing are dropped (reported on stderr), stray temporary files removed.
  static absl::StatusOr<std::unique_ptr<SnapshotStore>> Open(
      const std::string& dir, SnapshotRetention retention, int max_uploads = 4);

  // Whether `status` says the store could not store an upload (its disk is
  // full, or it cannot write): RESOURCE_EXHAUSTED ("the coordinator's
  // snapshot storage is full") or INTERNAL, naming no path of the
  // coordinator's (staged_file.h). Uploads that were refused for what they
  // sent are not.
  static bool IsStorageError(const absl::Status& status) {
    return gradsync::IsStorageError(status);
  }

  // One upload in progress. Not thread-safe itself; destroying it before
  // Commit() discards it.
  class Upload {
   public:
    ~Upload();
    // The next `data` at byte `offset` (must follow the previous chunk;
    // INVALID_ARGUMENT otherwise or past the declared size).
    absl::Status Append(int64_t offset, absl::string_view data);
    // Verifies size and checksum and makes the snapshot visible (replacing
    // an earlier one of the same job and step). INVALID_ARGUMENT when they
    // do not match, and the upload is discarded.
    absl::StatusOr<SnapshotInfo> Commit(const std::string& sha256);

   private:
    friend class SnapshotStore;
    Upload(SnapshotStore* store, SnapshotInfo info, SnapshotRetention retention,
           std::unique_ptr<StagedFile> file)
        : store_(store),
          info_(std::move(info)),
          retention_(retention),
          file_(std::move(file)) {}

    SnapshotStore* store_;
    SnapshotInfo info_;  // size = declared total
    const SnapshotRetention retention_;
    std::unique_ptr<StagedFile> file_;
  };

  // Starts an upload of `info.size` bytes for (job, step), whose commit
  // prunes the job under `retention` (default: the store's);
  // `info.sha256` and `created_unix_ms` are ignored. INVALID_ARGUMENT for
  // an empty job id, a negative step or a size outside (0, max_bytes];
  // RESOURCE_EXHAUSTED while `max_uploads` are in progress.
  absl::StatusOr<std::unique_ptr<Upload>> Begin(SnapshotInfo info,
                                                int64_t max_bytes);
  absl::StatusOr<std::unique_ptr<Upload>> Begin(SnapshotInfo info,
                                                int64_t max_bytes,
                                                SnapshotRetention retention);

  // A job's snapshots, oldest step first.
  std::vector<SnapshotInfo> List(const std::string& job_id);
  // The directory the snapshots live in.
  const std::string& dir() const { return dir_; }
  // The snapshot of `step`, or the newest when step < 0; NOT_FOUND naming
  // the job (and step) otherwise.
  absl::StatusOr<SnapshotInfo> Find(const std::string& job_id, int64_t step);
  // Streams a snapshot's bytes to `chunk` in order, in pieces of at most
  // `chunk_bytes` (at least one call, even for an empty file), reading the
  // file once and hashing it on the way; memory stays at one piece.
  // DATA_LOSS naming the file when it is damaged: a wrong size is found
  // before any piece, a wrong checksum before the last piece, which is then
  // never given, so a reader has the snapshot only when this returns OK.
  // CANCELLED when `chunk` returns false.
  absl::Status ReadChunks(
      const SnapshotInfo& info, int64_t chunk_bytes,
      const std::function<bool(int64_t offset, absl::string_view data)>& chunk);
  // All its bytes at once, checked the same way.
  absl::StatusOr<std::string> Read(const SnapshotInfo& info);
  // Owners whose name starts so hold a pin only while a call is in
  // progress; Open() drops those an earlier process left.
  static constexpr char kTransientOwnerPrefix[] = "submitting/";
  // Pins `job_id`'s snapshot of `step` (the newest when step < 0) for
  // `owner` (a job that starts from it), replacing the owner's pin;
  // NOT_FOUND as Find(). The pin holds until Unpin(owner), DropJob(owner)
  // or the owner's first own snapshot.
  absl::StatusOr<SnapshotInfo> Pin(const std::string& owner,
                                   const std::string& job_id, int64_t step);
  void Unpin(const std::string& owner);
  // A job was deleted: its snapshots go (but those pinned by other jobs,
  // until unpinned) and so do its own pins.
  void DropJob(const std::string& job_id);
  // Path of a snapshot's file (for tests and diagnostics).
  std::string PathOf(const SnapshotInfo& info) const;

 private:
  struct PinTarget {
    std::string job_id;
    int64_t step = 0;
  };

  SnapshotStore(std::string dir, SnapshotRetention retention, int max_uploads)
      : dir_(std::move(dir)),
        retention_(retention),
        slots_("snapshot", max_uploads) {}
  void LoadIndex() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LoadPins() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Both files; errors are logged (the in-memory state stays right, and the
  // next write tries again).
  void WriteState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Pinned(const SnapshotInfo& info) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the retention policy to `job_id` (none at all once the job is
  // deleted); pinned snapshots stay.
  void Prune(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the entries `drop` says to, deleting files no entry names.
  void RemoveEntries(const std::function<bool(const SnapshotInfo&)>& drop)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops `owner`'s pin and prunes the job it held.
  void UnpinLocked(const std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndUpload();
  absl::StatusOr<SnapshotInfo> Publish(SnapshotInfo info,
                                       const std::string& tmp_path,
                                       const SnapshotRetention& retention);

  const std::string dir_;
  const SnapshotRetention retention_;
  UploadSlots slots_;
  absl::Mutex mu_;
  std::vector<SnapshotInfo> index_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PinTarget> pins_ ABSL_GUARDED_BY(mu_);  // by owner
  std::set<std::string> deleted_jobs_ ABSL_GUARDED_BY(mu_);
  // Each job's retention as its last upload asked (in memory; the store's
  // default after a restart).
  std::map<std::string, SnapshotRetention> retention_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
