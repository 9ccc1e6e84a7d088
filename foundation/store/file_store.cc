#include "foundation/store/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), {});
  return true;
}

}  // namespace

FileStore::FileStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
}

std::string FileStore::PathOf(const std::string& key) const {
  // Keys may hold '/': encode them into one file name.
  std::string name;
  for (char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
        c == '.') {
      name += c;
    } else {
      name +=
          absl::StrCat("%", static_cast<int>(static_cast<unsigned char>(c)));
    }
  }
  return dir_ + "/" + name;
}

absl::Status FileStore::Set(const std::string& key, const std::string& value) {
  const std::string path = PathOf(key);
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".",
                                       std::hash<std::string>()(value));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << value;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileStore::Get(const std::string& key,
                                           absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string value;
  absl::Duration pause = absl::Microseconds(200);
  while (!ReadFile(PathOf(key), &value)) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("store get timed out waiting for key '", key, "'"));
    }
    absl::SleepFor(pause);  // polling a directory: files have no waiters
    pause = std::min(pause * 2, absl::Milliseconds(10));
  }
  return value;
}

absl::StatusOr<int64_t> FileStore::Add(const std::string& key, int64_t delta) {
  const std::string lock_path = PathOf(key) + ".lock";
  const int fd = open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
  if (fd < 0) return absl::UnavailableError("cannot open " + lock_path);
  flock(fd, LOCK_EX);
  std::string text;
  int64_t value = 0;
  if (ReadFile(PathOf(key), &text) && !absl::SimpleAtoi(text, &value)) {
    flock(fd, LOCK_UN);
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("store add: key '", key, "' does not hold an integer"));
  }
  if (__builtin_add_overflow(value, delta, &value)) {
    flock(fd, LOCK_UN);
    close(fd);
    return absl::OutOfRangeError(absl::StrCat(
        "store add: key '", key, "' would overflow a 64-bit integer"));
  }
  absl::Status s = Set(key, absl::StrCat(value));
  flock(fd, LOCK_UN);
  close(fd);
  if (!s.ok()) return s;
  return value;
}

}  // namespace gradsync
