#include "coordinator/persist/snapshot_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/wire/pread_full.h"
#include "foundation/files/durable_file.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

constexpr char kIndex[] = "index.tsv";
constexpr char kPins[] = "pins.tsv";
constexpr char kTmpPrefix[] = "upload-";

bool IsHexSha256(absl::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

absl::StatusOr<std::unique_ptr<SnapshotStore>> SnapshotStore::Open(
    const std::string& dir, SnapshotRetention retention, int max_uploads) {
  if (retention.keep_last < 1) {
    return absl::InvalidArgumentError("snapshot retention: keep_last >= 1");
  }
  if (max_uploads < 1) {
    return absl::InvalidArgumentError("snapshot store: max_uploads >= 1");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create snapshot directory ", dir, ": ", ec.message()));
  }
  std::unique_ptr<SnapshotStore> store(
      new SnapshotStore(dir, retention, max_uploads));
  // Uploads that were in flight when the process stopped.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(kTmpPrefix, 0) == 0) {
      fs::remove(e.path(), ec);
    }
  }
  absl::MutexLock lock(&store->mu_);
  store->LoadIndex();
  store->LoadPins();
  for (auto it = store->pins_.begin(); it != store->pins_.end();) {
    it = absl::StartsWith(it->first, kTransientOwnerPrefix)
             ? store->pins_.erase(it)
             : std::next(it);
  }
  return store;
}

std::string SnapshotStore::PathOf(const SnapshotInfo& info) const {
  return absl::StrCat(dir_, "/", info.sha256, ".pt");
}

void SnapshotStore::LoadIndex() {
  const std::string path = absl::StrCat(dir_, "/", kIndex);
  std::ifstream in(path);
  if (!in) return;  // a new store
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    SnapshotInfo info;
    // Indexes written before epoch_batch have 7 fields (it is then 0).
    if (f.size() == 8 &&
        (!absl::SimpleAtoi(f[7], &info.epoch_batch) || info.epoch_batch < 0)) {
      f.clear();  // malformed
    }
    if ((f.size() != 7 && f.size() != 8) || f[0].empty() ||
        !absl::SimpleAtoi(f[1], &info.step) || info.step < 0 ||
        !absl::SimpleAtoi(f[2], &info.epoch) ||
        !absl::SimpleAtod(f[3], &info.accuracy) ||
        !absl::SimpleAtoi(f[4], &info.size) || !IsHexSha256(f[5]) ||
        !absl::SimpleAtoi(f[6], &info.created_unix_ms)) {
      LogLine("coordinator",
              absl::StrFormat("snapshot index %s line %d is malformed; "
                              "skipped: %s",
                              path.c_str(), line_no, line.c_str()));
      continue;
    }
    info.job_id = f[0];
    info.sha256 = f[5];
    if (!fs::exists(PathOf(info))) {
      LogLine("coordinator",
              absl::StrFormat("snapshot %s step %lld: %s is missing; "
                              "dropped from the index",
                              info.job_id.c_str(),
                              static_cast<long long>(info.step),
                              PathOf(info).c_str()));
      continue;
    }
    index_.push_back(std::move(info));
  }
}

void SnapshotStore::LoadPins() {
  const std::string path = absl::StrCat(dir_, "/", kPins);
  std::ifstream in(path);
  if (!in) return;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    PinTarget pin;
    if (f.size() == 4 && f[0] == "pin" && !f[1].empty() && !f[2].empty() &&
        absl::SimpleAtoi(f[3], &pin.step)) {
      pin.job_id = f[2];
      pins_[f[1]] = std::move(pin);
    } else if (f.size() == 2 && f[0] == "deleted" && !f[1].empty()) {
      deleted_jobs_.insert(f[1]);
    } else {
      LogLine("coordinator",
              absl::StrFormat("snapshot pins %s line %d is malformed; "
                              "skipped: %s",
                              path.c_str(), line_no, line.c_str()));
    }
  }
}

void SnapshotStore::WriteState() {
  std::string index;
  for (const SnapshotInfo& i : index_) {
    absl::StrAppend(&index, i.job_id, "\t", i.step, "\t", i.epoch, "\t",
                    absl::StrFormat("%.17g", i.accuracy), "\t", i.size, "\t",
                    i.sha256, "\t", i.created_unix_ms, "\t", i.epoch_batch,
                    "\n");
  }
  std::string pins;
  for (const auto& [owner, pin] : pins_) {
    absl::StrAppend(&pins, "pin\t", owner, "\t", pin.job_id, "\t", pin.step,
                    "\n");
  }
  // A deleted job matters only while a pin keeps some of its snapshots.
  for (auto it = deleted_jobs_.begin(); it != deleted_jobs_.end();) {
    const bool kept =
        std::any_of(index_.begin(), index_.end(),
                    [&](const SnapshotInfo& i) { return i.job_id == *it; });
    if (!kept) {
      it = deleted_jobs_.erase(it);
      continue;
    }
    absl::StrAppend(&pins, "deleted\t", *it, "\n");
    ++it;
  }
  for (const auto& [name, content] :
       {std::pair<const char*, const std::string&>{kIndex, index},
        std::pair<const char*, const std::string&>{kPins, pins}}) {
    if (absl::Status s =
            ReplaceFileDurably(absl::StrCat(dir_, "/", name), content, 0600);
        !s.ok()) {
      LogLine("coordinator", absl::StrFormat("snapshot store: %s",
                                             std::string(s.message()).c_str()));
    }
  }
}

namespace {

constexpr char kStoragePayload[] = "gradsync/snapshot-storage";

// The store could not do `what` (errno `err`): RESOURCE_EXHAUSTED when its
// file system is full, INTERNAL otherwise; never a path of the
// coordinator's. Marked for IsStorageError.
absl::Status StorageError(const std::string& what, int err) {
  absl::Status s =
      err == ENOSPC || err == EDQUOT
          ? absl::ResourceExhaustedError(absl::StrCat(
                "the coordinator's snapshot storage is full (",
                std::strerror(err), "): ", what, " was not stored"))
          : absl::InternalError(absl::StrCat("the coordinator cannot store ",
                                             what, ": ", std::strerror(err)));
  s.SetPayload(kStoragePayload, absl::Cord("1"));
  return s;
}

std::string Describe(const SnapshotInfo& info) {
  return absl::StrCat("the snapshot of job ", info.job_id, " step ", info.step);
}

}  // namespace

bool SnapshotStore::IsStorageError(const absl::Status& status) {
  return status.GetPayload(kStoragePayload).has_value();
}

absl::StatusOr<std::unique_ptr<SnapshotStore::Upload>> SnapshotStore::Begin(
    SnapshotInfo info, int64_t max_bytes) {
  return Begin(std::move(info), max_bytes, retention_);
}

absl::StatusOr<std::unique_ptr<SnapshotStore::Upload>> SnapshotStore::Begin(
    SnapshotInfo info, int64_t max_bytes, SnapshotRetention retention) {
  if (retention.keep_last < 1) retention.keep_last = 1;
  if (info.job_id.empty()) {
    return absl::InvalidArgumentError("snapshot upload: job_id is required");
  }
  if (info.step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot upload: step must be >= 0 (got ", info.step, ")"));
  }
  if (info.epoch < 0 || info.epoch_batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot upload: epoch and epoch_batch must be >= 0 (got ", info.epoch,
        ", ", info.epoch_batch, ")"));
  }
  if (info.size <= 0 || info.size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot upload: size must be in (0, ", max_bytes,
                     "] bytes (got ", info.size, ")"));
  }
  int64_t n = 0;
  {
    absl::MutexLock lock(&mu_);
    if (uploads_ >= max_uploads_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "snapshot upload: ", uploads_,
          " uploads are in progress, the most this coordinator takes at "
          "once; try again later"));
    }
    ++uploads_;
    n = next_upload_++;
  }
  const std::string tmp = absl::StrCat(dir_, "/", kTmpPrefix, getpid(), "-", n);
  const int fd = open(
      tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    EndUpload();
    return StorageError(Describe(info), err);
  }
  // Reserve the space now: a full disk refuses the upload before its bytes
  // are sent (file systems without fallocate find out on write).
  if (fallocate(fd, 0, 0, static_cast<off_t>(info.size)) != 0 &&
      (errno == ENOSPC || errno == EDQUOT)) {
    const int err = errno;
    close(fd);
    std::remove(tmp.c_str());
    EndUpload();
    return StorageError(Describe(info), err);
  }
  return std::unique_ptr<Upload>(
      new Upload(this, std::move(info), retention, tmp, fd));
}

SnapshotStore::Upload::~Upload() {
  if (!done_) Discard();
  store_->EndUpload();
}

void SnapshotStore::EndUpload() {
  absl::MutexLock lock(&mu_);
  --uploads_;
}

void SnapshotStore::Upload::Discard() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  std::remove(tmp_.c_str());
  done_ = true;
}

absl::Status SnapshotStore::Upload::Append(int64_t offset,
                                           absl::string_view data) {
  if (done_) return absl::FailedPreconditionError("upload already finished");
  if (offset != written_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot upload: chunk at byte ", offset, ", expected byte ", written_,
        " (chunks must come in order)"));
  }
  if (written_ + static_cast<int64_t>(data.size()) > info_.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot upload: chunk ends at byte ", written_ + data.size(),
        ", past the declared size ", info_.size));
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      Discard();
      return StorageError(Describe(info_), err);
    }
    done += static_cast<size_t>(n);
  }
  // Start writing this piece to disk now, so that Commit()'s fsync waits for
  // the last pieces only instead of the whole file.
  (void)sync_file_range(fd_, written_, static_cast<off_t>(data.size()),
                        SYNC_FILE_RANGE_WRITE);
  sha256_.Update(data);
  written_ += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Upload::Commit(
    const std::string& sha256) {
  if (done_) return absl::FailedPreconditionError("upload already finished");
  if (written_ != info_.size) {
    const int64_t got = written_;
    Discard();
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot upload: ", got, " of ", info_.size, " bytes arrived"));
  }
  const int synced = fsync(fd_) == 0 ? 0 : errno;
  close(fd_);
  fd_ = -1;
  if (synced != 0) {
    Discard();
    return StorageError(Describe(info_), synced);
  }
  const std::string actual = sha256_.HexDigest();
  if (actual != sha256) {
    Discard();
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot upload: checksum mismatch (sent ", sha256,
                     ", received ", actual, ")"));
  }
  info_.sha256 = actual;
  done_ = true;
  absl::StatusOr<SnapshotInfo> published =
      store_->Publish(info_, tmp_, retention_);
  if (!published.ok()) std::remove(tmp_.c_str());
  return published;
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Publish(
    SnapshotInfo info, const std::string& tmp_path,
    const SnapshotRetention& retention) {
  info.created_unix_ms = absl::ToUnixMillis(absl::Now());
  absl::MutexLock lock(&mu_);
  const std::string path = PathOf(info);
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    return StorageError(Describe(info), errno);
  }
  SyncDirectory(dir_);
  // A re-upload of (job, step) replaces the entry, and its file unless the
  // content is the same.
  RemoveEntries([&](const SnapshotInfo& i) {
    return i.job_id == info.job_id && i.step == info.step &&
           i.sha256 != info.sha256;
  });
  index_.erase(std::remove_if(index_.begin(), index_.end(),
                              [&](const SnapshotInfo& i) {
                                return i.job_id == info.job_id &&
                                       i.step == info.step;
                              }),
               index_.end());
  index_.push_back(info);
  retention_of_[info.job_id] = retention;
  deleted_jobs_.erase(info.job_id);
  Prune(info.job_id);
  // The job has a snapshot of its own: what it started from is free.
  UnpinLocked(info.job_id);
  WriteState();
  return info;
}

bool SnapshotStore::Pinned(const SnapshotInfo& info) const {
  for (const auto& [owner, pin] : pins_) {
    if (pin.job_id == info.job_id && pin.step == info.step) return true;
  }
  return false;
}

void SnapshotStore::RemoveEntries(
    const std::function<bool(const SnapshotInfo&)>& drop) {
  std::vector<SnapshotInfo> dropped;
  std::vector<SnapshotInfo> kept;
  for (SnapshotInfo& i : index_) {
    (drop(i) ? dropped : kept).push_back(std::move(i));
  }
  index_ = std::move(kept);
  for (const SnapshotInfo& d : dropped) {
    const bool referenced = std::any_of(
        index_.begin(), index_.end(),
        [&](const SnapshotInfo& i) { return i.sha256 == d.sha256; });
    if (!referenced) std::remove(PathOf(d).c_str());
  }
}

void SnapshotStore::Prune(const std::string& job_id) {
  std::set<int64_t> keep;
  if (deleted_jobs_.count(job_id) == 0) {
    auto r = retention_of_.find(job_id);
    const SnapshotRetention& retention =
        r == retention_of_.end() ? retention_ : r->second;
    std::vector<const SnapshotInfo*> mine;
    for (const SnapshotInfo& i : index_) {
      if (i.job_id == job_id) mine.push_back(&i);
    }
    std::sort(mine.begin(), mine.end(),
              [](const SnapshotInfo* a, const SnapshotInfo* b) {
                return a->step > b->step;
              });
    for (size_t i = 0; i < mine.size() && i < static_cast<size_t>(std::max(
                                                  1, retention.keep_last));
         ++i) {
      keep.insert(mine[i]->step);
    }
    const SnapshotInfo* best = nullptr;
    for (const SnapshotInfo* i : mine) {
      if (i->accuracy >= 0 &&
          (best == nullptr || i->accuracy > best->accuracy)) {
        best = i;
      }
    }
    if (retention.keep_best && best != nullptr) keep.insert(best->step);
  }
  RemoveEntries([&](const SnapshotInfo& i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return i.job_id == job_id && keep.count(i.step) == 0 && !Pinned(i);
  });
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Pin(const std::string& owner,
                                                const std::string& job_id,
                                                int64_t step) {
  absl::StatusOr<SnapshotInfo> info = Find(job_id, step);
  if (!info.ok()) return info.status();
  absl::MutexLock lock(&mu_);
  // Find() let go of the lock: the snapshot must still be there.
  const bool present =
      std::any_of(index_.begin(), index_.end(), [&](const SnapshotInfo& i) {
        return i.job_id == job_id && i.step == info->step;
      });
  if (!present) {
    return absl::NotFoundError(
        absl::StrCat("job ", job_id, "'s snapshot of step ", info->step,
                     " was just removed by retention; pick another"));
  }
  UnpinLocked(owner);
  pins_[owner] = PinTarget{job_id, info->step};
  WriteState();
  return info;
}

void SnapshotStore::Unpin(const std::string& owner) {
  absl::MutexLock lock(&mu_);
  if (pins_.count(owner) == 0) return;
  UnpinLocked(owner);
  WriteState();
}

void SnapshotStore::UnpinLocked(const std::string& owner) {
  auto it = pins_.find(owner);
  if (it == pins_.end()) return;
  const std::string job_id = it->second.job_id;
  pins_.erase(it);
  Prune(job_id);
}

void SnapshotStore::DropJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  deleted_jobs_.insert(job_id);
  retention_of_.erase(job_id);
  UnpinLocked(job_id);
  Prune(job_id);
  WriteState();
}

std::vector<SnapshotInfo> SnapshotStore::List(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  std::vector<SnapshotInfo> out;
  for (const SnapshotInfo& i : index_) {
    if (i.job_id == job_id) out.push_back(i);
  }
  std::sort(out.begin(), out.end(),
            [](const SnapshotInfo& a, const SnapshotInfo& b) {
              return a.step < b.step;
            });
  return out;
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Find(const std::string& job_id,
                                                 int64_t step) {
  const std::vector<SnapshotInfo> all = List(job_id);
  if (all.empty()) {
    return absl::NotFoundError(
        absl::StrCat("job ", job_id, " has no snapshots"));
  }
  if (step < 0) return all.back();
  for (const SnapshotInfo& i : all) {
    if (i.step == step) return i;
  }
  std::vector<std::string> steps;
  for (const SnapshotInfo& i : all) steps.push_back(absl::StrCat(i.step));
  return absl::NotFoundError(
      absl::StrCat("job ", job_id, " has no snapshot of step ", step,
                   " (it has steps ", absl::StrJoin(steps, ", "), ")"));
}

absl::Status SnapshotStore::ReadChunks(
    const SnapshotInfo& info, int64_t chunk_bytes,
    const std::function<bool(int64_t offset, absl::string_view data)>& chunk) {
  const std::string path = PathOf(info);
  auto damaged = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("snapshot file ", path, " ", what, "; not served"));
  };
  // One descriptor throughout: retention may unlink the file meanwhile.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return damaged("is missing");
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size != info.size) {
    close(fd);
    return damaged(absl::StrCat("is not ", info.size, " bytes long"));
  }
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::string buffer(static_cast<size_t>(std::clamp<int64_t>(
                         chunk_bytes, 1, std::max<int64_t>(1, info.size))),
                     '\0');
  Sha256 sha256;
  absl::Status status;
  int64_t offset = 0;
  do {
    const size_t want = static_cast<size_t>(std::min<int64_t>(
        static_cast<int64_t>(buffer.size()), info.size - offset));
    if (absl::Status read = PreadFull(fd, buffer.data(), want, offset);
        !read.ok()) {
      status = damaged(
          absl::StrCat("could not be read to its end (", read.message(), ")"));
      break;
    }
    const absl::string_view piece(buffer.data(), want);
    sha256.Update(piece);
    // The last piece goes out only once the whole file checked out.
    if (offset + static_cast<int64_t>(want) == info.size &&
        sha256.HexDigest() != info.sha256) {
      status = damaged("is corrupt (its checksum differs from the upload's)");
      break;
    }
    if (!chunk(offset, piece)) {
      status = absl::CancelledError("the snapshot's reader went away");
      break;
    }
    offset += static_cast<int64_t>(want);
  } while (offset < info.size);
  close(fd);
  return status;
}

absl::StatusOr<std::string> SnapshotStore::Read(const SnapshotInfo& info) {
  std::string data;
  data.reserve(static_cast<size_t>(info.size));
  absl::Status s =
      ReadChunks(info, int64_t{1} << 20, [&](int64_t, absl::string_view piece) {
        data.append(piece.data(), piece.size());
        return true;
      });
  if (!s.ok()) return s;
  return data;
}

}  // namespace gradsync
