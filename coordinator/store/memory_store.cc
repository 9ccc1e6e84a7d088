#include "coordinator/store/memory_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {

absl::Status MemoryStore::Set(const std::string& key,
                              const std::string& value) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  data_[key] = value;
  return absl::OkStatus();
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
  data_[key] = absl::StrCat(value);
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
