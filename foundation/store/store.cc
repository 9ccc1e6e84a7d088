#include "foundation/store/store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync {

absl::Status Store::Wait(const std::vector<std::string>& keys,
                         absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> missing;
  for (const std::string& key : keys) {
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    absl::StatusOr<std::string> got = Get(key, left);
    if (absl::IsDeadlineExceeded(got.status())) {
      missing.push_back(key);
    } else if (!got.ok()) {
      return got.status();  // e.g. the store was closed
    }
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "store wait timed out; missing keys: ", absl::StrJoin(missing, ", ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Store::MultiGet(
    const std::vector<std::string>& keys, absl::Duration timeout) {
  if (absl::Status s = Wait(keys, timeout); !s.ok()) return s;
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) {
    // Keys are never deleted: after the wait every one is there.
    absl::StatusOr<std::string> value = Get(key, absl::ZeroDuration());
    if (!value.ok()) return value.status();
    values.push_back(*std::move(value));
  }
  return values;
}

}  // namespace gradsync
