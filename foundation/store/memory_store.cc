#include "foundation/store/memory_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {

absl::Status MemoryStore::CheckRoom(const std::string& key,
                                    size_t value_size) const {
  auto it = data_.find(key);
  const bool fresh = it == data_.end();
  if (fresh && data_.size() >= limits_.max_keys) {
    return absl::ResourceExhaustedError(absl::StrCat("store: already ",
                                                     data_.size(),
                                                     " keys, the most one "
                                                     "job attempt may have; '",
                                                     key, "' not added"));
  }
  const size_t before = fresh ? 0 : it->first.size() + it->second.size();
  const size_t after = key.size() + value_size;
  if (bytes_ - before + after > limits_.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "store: writing '", key, "' (", value_size, " bytes) would pass the ",
        limits_.max_bytes, " bytes one job attempt's store may hold"));
  }
  return absl::OkStatus();
}

absl::Status MemoryStore::Set(const std::string& key,
                              const std::string& value) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  if (absl::Status s = CheckRoom(key, value.size()); !s.ok()) return s;
  PutLocked(key, value);
  return absl::OkStatus();
}

void MemoryStore::PutLocked(const std::string& key, std::string value) {
  auto [it, fresh] = data_.try_emplace(key);
  if (!fresh) bytes_ -= key.size() + it->second.size();
  bytes_ += key.size() + value.size();
  it->second = std::move(value);
}

absl::StatusOr<std::string> MemoryStore::Get(const std::string& key,
                                             absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  auto ready = [this, &key]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !closed_.ok() || data_.count(key) > 0;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!closed_.ok()) return closed_;
  auto it = data_.find(key);
  if (it == data_.end()) {
    return absl::DeadlineExceededError(
        absl::StrCat("store get timed out waiting for key '", key, "'"));
  }
  return it->second;
}

absl::StatusOr<int64_t> MemoryStore::Add(const std::string& key,
                                         int64_t delta) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  int64_t value = 0;
  auto it = data_.find(key);
  if (it != data_.end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store add: key '", key, "' does not hold an integer"));
  }
  if (__builtin_add_overflow(value, delta, &value)) {
    return absl::OutOfRangeError(absl::StrCat(
        "store add: key '", key, "' would overflow a 64-bit integer"));
  }
  std::string text = absl::StrCat(value);
  if (absl::Status s = CheckRoom(key, text.size()); !s.ok()) return s;
  PutLocked(key, std::move(text));
  return value;
}

size_t MemoryStore::Size() const {
  absl::MutexLock lock(&mu_);
  return data_.size();
}

void MemoryStore::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (closed_.ok()) closed_ = std::move(status);
}

}  // namespace gradsync
