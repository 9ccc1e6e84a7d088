#include "coordinator/persist/model_file_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/persist/checked_read.h"
#include "coordinator/persist/index_lines.h"
#include "coordinator/wire/sha256.h"
#include "foundation/files/durable_file.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

constexpr char kIndex[] = "index.tsv";
constexpr char kTmpPrefix[] = "upload-";
constexpr size_t kMaxNameBytes = 200;

// The last path component, printable, without tabs, at most kMaxNameBytes.
std::string CleanName(const std::string& name) {
  std::string base = fs::path(name).filename().string();
  if (base.size() > kMaxNameBytes) base.resize(kMaxNameBytes);
  for (char& c : base) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  }
  return base.empty() ? "model.pt" : base;
}

std::string Describe(const ModelFileInfo& info) {
  return absl::StrCat("the model file ", info.name);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelFileStore>> ModelFileStore::Open(
    const std::string& dir, int max_uploads) {
  if (max_uploads < 1) {
    return absl::InvalidArgumentError("model file store: max_uploads >= 1");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || chmod(dir.c_str(), 0700) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create model file directory ", dir, ": ",
                     ec ? ec.message() : std::strerror(errno)));
  }
  std::unique_ptr<ModelFileStore> store(new ModelFileStore(dir, max_uploads));
  RemoveStagedFiles(dir, kTmpPrefix);
  absl::MutexLock lock(&store->mu_);
  store->LoadIndex();
  return store;
}

std::string ModelFileStore::PathOf(const ModelFileInfo& info) const {
  return absl::StrCat(dir_, "/", info.sha256, ".pt");
}

void ModelFileStore::LoadIndex() {
  std::vector<ModelFileInfo> loaded;  // the lambda holds no lock to annotate
  ReadIndexLines(
      absl::StrCat(dir_, "/", kIndex), "model file index", 4,
      [this, &loaded](const std::vector<std::string>& f) {
        ModelFileInfo info;
        if (f.size() != 4 || !IsSha256Hex(f[0]) ||
            !absl::SimpleAtoi(f[1], &info.size) || info.size <= 0 ||
            !absl::SimpleAtoi(f[2], &info.created_unix_ms)) {
          return false;
        }
        info.sha256 = f[0];
        info.name = CleanName(f[3]);
        if (!fs::exists(PathOf(info))) {
          LogLine("coordinator",
                  absl::StrFormat("model file %s: %s is missing; dropped "
                                  "from the index",
                                  info.sha256, PathOf(info)));
          return true;
        }
        loaded.push_back(std::move(info));
        return true;
      });
  index_.insert(index_.end(), std::make_move_iterator(loaded.begin()),
                std::make_move_iterator(loaded.end()));
}

void ModelFileStore::WriteIndex() {
  std::string index;
  for (const ModelFileInfo& i : index_) {
    absl::StrAppend(&index, i.sha256, "\t", i.size, "\t", i.created_unix_ms,
                    "\t", i.name, "\n");
  }
  if (absl::Status s =
          ReplaceFileDurably(absl::StrCat(dir_, "/", kIndex), index, 0600);
      !s.ok()) {
    LogLine("coordinator", absl::StrCat("model file store: ", s.message()));
  }
}

absl::StatusOr<std::unique_ptr<ModelFileStore::Upload>> ModelFileStore::Begin(
    const std::string& name, int64_t size, int64_t max_bytes) {
  if (size <= 0 || size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("model file upload: size must be in (0, ", max_bytes,
                     "] bytes (got ", size, ")"));
  }
  if (absl::Status s = slots_.Take(); !s.ok()) return s;
  ModelFileInfo info;
  info.name = CleanName(name);
  info.size = size;
  auto file =
      StagedFile::Create(dir_, kTmpPrefix, size, "model file", Describe(info));
  if (!file.ok()) {
    EndUpload();
    return file.status();
  }
  return std::unique_ptr<Upload>(
      new Upload(this, std::move(info), *std::move(file)));
}

void ModelFileStore::EndUpload() { slots_.Release(); }

ModelFileStore::Upload::~Upload() { store_->EndUpload(); }

absl::Status ModelFileStore::Upload::Append(int64_t offset,
                                            absl::string_view data) {
  return file_->Append(offset, data);
}

absl::StatusOr<ModelFileInfo> ModelFileStore::Upload::Commit(
    const std::string& sha256) {
  if (absl::Status s = file_->Finish(sha256); !s.ok()) return s;
  info_.sha256 = file_->sha256();
  absl::StatusOr<ModelFileInfo> published =
      store_->Publish(info_, file_->path());
  file_->Discard();  // renamed away when published; else removed
  return published;
}

absl::StatusOr<ModelFileInfo> ModelFileStore::Publish(
    ModelFileInfo info, const std::string& staged) {
  absl::MutexLock lock(&mu_);
  for (const ModelFileInfo& i : index_) {
    if (i.sha256 == info.sha256) return i;  // the same bytes, kept once
  }
  info.created_unix_ms = absl::ToUnixMillis(absl::Now());
  if (std::rename(staged.c_str(), PathOf(info).c_str()) != 0) {
    return StorageError("model file", Describe(info), errno);
  }
  SyncDirectory(dir_);
  index_.push_back(info);
  WriteIndex();
  return info;
}

std::vector<ModelFileInfo> ModelFileStore::List() {
  absl::MutexLock lock(&mu_);
  return index_;
}

absl::StatusOr<ModelFileInfo> ModelFileStore::Find(const std::string& sha256) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model file digest '", OneLine(sha256.substr(0, 80)),
                     "' is not a SHA-256 (64 lower-case hex digits)"));
  }
  absl::MutexLock lock(&mu_);
  for (const ModelFileInfo& i : index_) {
    if (i.sha256 == sha256) return i;
  }
  return absl::NotFoundError(
      absl::StrCat("no model file ", sha256,
                   " on this coordinator (upload it with "
                   "gradsync submit --model-file)"));
}

absl::Status ModelFileStore::Delete(
    const std::string& sha256,
    const std::function<std::string(const std::string&)>& referrer) {
  auto found = Find(sha256);
  if (!found.ok()) return found.status();
  absl::MutexLock lock(&mu_);
  // Checked under the lock: no upload can publish the digest meanwhile.
  if (const std::string user = referrer(sha256); !user.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model file ", sha256, " is used by ", user, "; delete the job first"));
  }
  index_.erase(std::remove_if(
                   index_.begin(), index_.end(),
                   [&](const ModelFileInfo& i) { return i.sha256 == sha256; }),
               index_.end());
  WriteIndex();
  std::remove(PathOf(*found).c_str());
  return absl::OkStatus();
}

absl::Status ModelFileStore::ReadChunks(
    const ModelFileInfo& info, int64_t chunk_bytes,
    const std::function<bool(int64_t offset, absl::string_view data)>& chunk) {
  return ReadCheckedChunks(PathOf(info), info.size, info.sha256, chunk_bytes,
                           "model file", chunk);
}

}  // namespace gradsync
