#include "coordinator/kv_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {

absl::Status KvStore::Set(const std::string& key, std::string value) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  data_[key] = std::move(value);
  return absl::OkStatus();
}

absl::StatusOr<std::string> KvStore::Get(const std::string& key,
                                         absl::Time deadline) {
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

absl::StatusOr<int64_t> KvStore::Add(const std::string& key, int64_t delta) {
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  int64_t value = 0;
  auto it = data_.find(key);
  if (it != data_.end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store add: key '", key, "' does not hold an integer"));
  }
  value += delta;
  data_[key] = absl::StrCat(value);
  return value;
}

absl::Status KvStore::Wait(const std::vector<std::string>& keys,
                           absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, &keys]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (!closed_.ok()) return true;
    for (const std::string& key : keys) {
      if (data_.count(key) == 0) return false;
    }
    return true;
  };
  mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  if (!closed_.ok()) return closed_;
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    if (data_.count(key) == 0) missing.push_back(key);
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "store wait timed out; missing keys: ", absl::StrJoin(missing, ", ")));
  }
  return absl::OkStatus();
}

size_t KvStore::Size() const {
  absl::MutexLock lock(&mu_);
  return data_.size();
}

void KvStore::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (closed_.ok()) closed_ = std::move(status);
}

}  // namespace gradsync
