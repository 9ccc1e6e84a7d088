#include "coordinator/server/key_owner.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "foundation/store/rendezvous_keys.h"

namespace gradsync {

std::optional<int> KeyOwner(absl::string_view key) {
  for (const char* rank_zero : rendezvous_keys::kRankZeroKeys) {
    if (absl::EndsWith(key, rank_zero)) return 0;
  }
  const size_t cut = key.find_last_of("/_");
  if (cut == absl::string_view::npos) return std::nullopt;
  const absl::string_view tail = key.substr(cut + 1);
  int rank = 0;
  if (tail.empty() || tail.size() > 9 ||
      tail.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(tail, &rank)) {
    return std::nullopt;
  }
  return rank;
}

}  // namespace gradsync
