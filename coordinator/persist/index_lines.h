// ReadIndexLines: the coordinator's small tab-separated state files (a
// store's index.tsv, the snapshot pins.tsv), read a line at a time. Each
// line's fields go to a parser; a line it refuses is logged with the file
// and line number and skipped, so a damaged line costs its entry only.
// Thread safety: a free function; the caller owns the file.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gradsync {

// Calls `parse` with the fields of each line of `path`, split at tabs into
// at most `max_fields` (the last keeping any further tabs; 0: no limit).
// A line for which `parse` returns false is logged as "<what> <path> line
// N is malformed; skipped: <line>". A file that cannot be opened (a new
// store) reads as empty.
void ReadIndexLines(
    const std::string& path, absl::string_view what, int max_fields,
    const std::function<bool(const std::vector<std::string>& fields)>& parse);

}  // namespace gradsync
