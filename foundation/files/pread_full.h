// PreadFull: exactly n bytes of a file at an offset, retrying the short
// reads pread(2) may return. Shared by the snapshot store (serving), the
// uploader (sending), which both read snapshot files piece by piece, and
// the WebDataset shard index and reader (foundation/data_index/
// shard_index.h, loader/shard_dataset.h), which read members by offset.
// Thread safety: as pread(2); concurrent calls on one descriptor are fine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace gradsync {

// Reads `n` bytes at `offset` of `fd` into `out`. DATA_LOSS naming the byte
// where the file ended first, or the read error's errno text.
absl::Status PreadFull(int fd, char* out, size_t n, int64_t offset);

}  // namespace gradsync
