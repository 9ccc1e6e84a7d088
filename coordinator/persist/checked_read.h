// ReadCheckedChunks: a stored file of a content-addressed store, served
// only if it is still what was stored. Streams the file's bytes to `chunk`
// in order, in pieces of at most `chunk_bytes` (at least one call, even for
// an empty file), reading it once through one descriptor (a store may
// unlink it meanwhile) and hashing it on the way; memory stays at one
// piece. DATA_LOSS naming the file ("<kind> file <path> is corrupt ...;
// not served") when it is missing, of another size (found before any
// piece) or of another SHA-256 (found before the last piece, which is then
// never given), so a reader has the file only when this returns OK.
// CANCELLED when `chunk` returns false.
// Thread safety: a free function.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

absl::Status ReadCheckedChunks(
    const std::string& path, int64_t size, const std::string& sha256,
    int64_t chunk_bytes, absl::string_view kind,
    const std::function<bool(int64_t offset, absl::string_view data)>& chunk);

}  // namespace gradsync
