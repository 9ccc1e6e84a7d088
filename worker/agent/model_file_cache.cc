#include "worker/agent/model_file_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "coordinator/wire/sha256.h"
#include "foundation/files/durable_file.h"

namespace gradsync {
namespace {

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) return std::nullopt;
  return bytes.str();
}

}  // namespace

absl::Status CheckModelFileDigest(absl::string_view bytes,
                                  const std::string& sha256) {
  const std::string actual = Sha256Hex(bytes);
  if (actual == sha256) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("model file ", sha256,
                                          ": its bytes hash to ", actual,
                                          " (damaged or replaced)"));
}

absl::StatusOr<std::unique_ptr<ModelFileCache>> ModelFileCache::Open(
    const std::string& dir) {
  if (dir.empty()) {
    auto scratch = ScratchDirectory::Create("model-files");
    if (!scratch.ok()) return scratch.status();
    const std::string path = scratch->path();
    return std::unique_ptr<ModelFileCache>(
        new ModelFileCache(path, std::move(*scratch)));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st;
  if (ec || chmod(dir.c_str(), 0700) != 0 || lstat(dir.c_str(), &st) != 0 ||
      !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model file cache ", dir,
                     " must be a directory of this user's, mode 0700 (",
                     ec ? ec.message() : std::strerror(errno), ")"));
  }
  return std::unique_ptr<ModelFileCache>(new ModelFileCache(dir, std::nullopt));
}

absl::StatusOr<std::string> ModelFileCache::Path(
    const std::string& sha256,
    const std::function<absl::StatusOr<std::string>()>& download) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError(
        "model file digest is not a SHA-256 (64 lower-case hex digits)");
  }
  absl::MutexLock lock(&mu_);
  const std::string path = absl::StrCat(dir_, "/", sha256, ".pt");
  if (std::optional<std::string> cached = ReadAll(path);
      cached && CheckModelFileDigest(*cached, sha256).ok()) {
    return path;
  }
  absl::StatusOr<std::string> bytes = download();
  if (!bytes.ok()) return bytes.status();
  ++downloads_;
  if (absl::Status s = CheckModelFileDigest(*bytes, sha256); !s.ok()) return s;
  if (absl::Status s = ReplaceFileDurably(path, *bytes, 0600); !s.ok()) {
    return s;
  }
  return path;
}

}  // namespace gradsync
