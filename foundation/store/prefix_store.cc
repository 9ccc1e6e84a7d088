#include "foundation/store/prefix_store.h"

namespace gradsync {

absl::Status PrefixStore::Set(const std::string& key,
                              const std::string& value) {
  return base_->Set(prefix_ + key, value);
}

absl::StatusOr<std::string> PrefixStore::Get(const std::string& key,
                                             absl::Duration timeout) {
  return base_->Get(prefix_ + key, timeout);
}

absl::StatusOr<int64_t> PrefixStore::Add(const std::string& key,
                                         int64_t delta) {
  return base_->Add(prefix_ + key, delta);
}

absl::Status PrefixStore::Wait(const std::vector<std::string>& keys,
                               absl::Duration timeout) {
  return base_->Wait(Prefixed(keys), timeout);
}

absl::StatusOr<std::vector<std::string>> PrefixStore::MultiGet(
    const std::vector<std::string>& keys, absl::Duration timeout) {
  return base_->MultiGet(Prefixed(keys), timeout);
}

std::vector<std::string> PrefixStore::Prefixed(
    const std::vector<std::string>& keys) const {
  std::vector<std::string> prefixed;
  prefixed.reserve(keys.size());
  for (const std::string& k : keys) prefixed.push_back(prefix_ + k);
  return prefixed;
}

}  // namespace gradsync
