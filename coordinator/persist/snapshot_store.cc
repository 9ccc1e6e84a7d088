#include "coordinator/persist/snapshot_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <set>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/persist/checked_read.h"
#include "coordinator/persist/index_lines.h"
#include "foundation/files/durable_file.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

constexpr char kIndex[] = "index.tsv";
constexpr char kPins[] = "pins.tsv";
constexpr char kTmpPrefix[] = "upload-";

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
  RemoveStagedFiles(dir, kTmpPrefix);
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
  std::vector<SnapshotInfo> loaded;  // the lambda holds no lock to annotate
  ReadIndexLines(
      absl::StrCat(dir_, "/", kIndex), "snapshot index", 0,
      [this, &loaded](const std::vector<std::string>& f) {
        SnapshotInfo info;
        // Indexes written before epoch_batch have 7 fields (it is then 0).
        if (f.size() == 8 && (!absl::SimpleAtoi(f[7], &info.epoch_batch) ||
                              info.epoch_batch < 0)) {
          return false;
        }
        if ((f.size() != 7 && f.size() != 8) || f[0].empty() ||
            !absl::SimpleAtoi(f[1], &info.step) || info.step < 0 ||
            !absl::SimpleAtoi(f[2], &info.epoch) ||
            !absl::SimpleAtod(f[3], &info.accuracy) ||
            !absl::SimpleAtoi(f[4], &info.size) || !IsSha256Hex(f[5]) ||
            !absl::SimpleAtoi(f[6], &info.created_unix_ms)) {
          return false;
        }
        info.job_id = f[0];
        info.sha256 = f[5];
        if (!fs::exists(PathOf(info))) {
          LogLine("coordinator",
                  absl::StrFormat("snapshot %s step %d: %s is missing; "
                                  "dropped from the index",
                                  info.job_id, info.step, PathOf(info)));
          return true;
        }
        loaded.push_back(std::move(info));
        return true;
      });
  index_.insert(index_.end(), std::make_move_iterator(loaded.begin()),
                std::make_move_iterator(loaded.end()));
}

void SnapshotStore::LoadPins() {
  // Gathered first: the lambda holds no lock to annotate.
  std::vector<std::pair<std::string, PinTarget>> pins;
  std::vector<std::string> deleted;
  ReadIndexLines(absl::StrCat(dir_, "/", kPins), "snapshot pins", 0,
                 [&pins, &deleted](const std::vector<std::string>& f) {
                   PinTarget pin;
                   if (f.size() == 4 && f[0] == "pin" && !f[1].empty() &&
                       !f[2].empty() && absl::SimpleAtoi(f[3], &pin.step)) {
                     pin.job_id = f[2];
                     pins.emplace_back(f[1], std::move(pin));
                     return true;
                   }
                   if (f.size() == 2 && f[0] == "deleted" && !f[1].empty()) {
                     deleted.push_back(f[1]);
                     return true;
                   }
                   return false;
                 });
  for (auto& [owner, pin] : pins) pins_[owner] = std::move(pin);
  deleted_jobs_.insert(deleted.begin(), deleted.end());
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

std::string Describe(const SnapshotInfo& info) {
  return absl::StrCat("the snapshot of job ", info.job_id, " step ", info.step);
}

}  // namespace

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
  if (absl::Status s = slots_.Take(); !s.ok()) return s;
  auto file = StagedFile::Create(dir_, kTmpPrefix, info.size, "snapshot",
                                 Describe(info));
  if (!file.ok()) {
    EndUpload();
    return file.status();
  }
  return std::unique_ptr<Upload>(
      new Upload(this, std::move(info), retention, *std::move(file)));
}

SnapshotStore::Upload::~Upload() { store_->EndUpload(); }

void SnapshotStore::EndUpload() { slots_.Release(); }

absl::Status SnapshotStore::Upload::Append(int64_t offset,
                                           absl::string_view data) {
  return file_->Append(offset, data);
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Upload::Commit(
    const std::string& sha256) {
  if (absl::Status s = file_->Finish(sha256); !s.ok()) return s;
  info_.sha256 = file_->sha256();
  absl::StatusOr<SnapshotInfo> published =
      store_->Publish(info_, file_->path(), retention_);
  if (!published.ok()) file_->Discard();
  return published;
}

absl::StatusOr<SnapshotInfo> SnapshotStore::Publish(
    SnapshotInfo info, const std::string& tmp_path,
    const SnapshotRetention& retention) {
  info.created_unix_ms = absl::ToUnixMillis(absl::Now());
  absl::MutexLock lock(&mu_);
  const std::string path = PathOf(info);
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    return StorageError("snapshot", Describe(info), errno);
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
  return ReadCheckedChunks(PathOf(info), info.size, info.sha256, chunk_bytes,
                           "snapshot", chunk);
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
