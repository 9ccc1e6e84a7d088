// PrefixStore: a namespace inside another Store (store.h): every key is
// prefixed, so several users (communicators, attempts) share one store
// without clashing. Thread-safe when the base store is.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "foundation/store/store.h"

namespace gradsync {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : prefix_(std::move(prefix)), base_(std::move(base)) {}
  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  // The base store's own Wait (one RPC for a RemoteStore).
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;
  // The base store's own MultiGet (one RPC for a RemoteStore).
  absl::StatusOr<std::vector<std::string>> MultiGet(
      const std::vector<std::string>& keys, absl::Duration timeout) override;

 private:
  std::vector<std::string> Prefixed(const std::vector<std::string>& keys) const;

  const std::string prefix_;
  const std::shared_ptr<Store> base_;
};

}  // namespace gradsync
