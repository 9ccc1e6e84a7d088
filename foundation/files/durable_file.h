// Durable file writes shared by both planes (worker checkpoints, the
// coordinator's snapshot index, token files): a file is either absent or
// whole on disk, never written through a link someone planted.
//
// Thread-compatible (plain functions; concurrent writers of one path must
// coordinate themselves).
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// Creates `path` (mode `mode`, O_EXCL | O_NOFOLLOW), writes `bytes` and
// fsyncs it. With `replace`, an existing entry at `path` (a stale temporary
// file, a planted link) is unlinked first; without, an existing one is
// FAILED_PRECONDITION. Other failures are DATA_LOSS naming the path.
absl::Status WriteNewFile(const std::string& path, absl::string_view bytes,
                          mode_t mode, bool replace);

// Replaces `path` atomically and durably: WriteNewFile(path + ".tmp"),
// rename over `path`, fsync the directory. Readers see the old or the new
// content, also after a crash.
absl::Status ReplaceFileDurably(const std::string& path,
                                absl::string_view bytes, mode_t mode);

// Makes renames and creations inside `dir` durable (best effort).
void SyncDirectory(const std::string& dir);

}  // namespace gradsync
