// Reads the communicators' deadline errors ("... rank(s) 1, 2 did not
// arrive ...") in tests.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// True when `status` names `rank` among the ranks that did not arrive (a live
// rank starved of CPU past the deadline may be named beside it).
inline bool NamesAbsentRank(const absl::Status& status, int rank) {
  const absl::string_view msg = status.message();
  const size_t begin = msg.find("rank(s) ");
  const size_t end = msg.find(" did not arrive");
  if (begin == absl::string_view::npos || end == absl::string_view::npos ||
      end < begin) {
    return false;
  }
  for (absl::string_view r :
       absl::StrSplit(msg.substr(begin + 8, end - begin - 8), ", ")) {
    if (r == std::to_string(rank)) return true;
  }
  return false;
}

}  // namespace gradsync
