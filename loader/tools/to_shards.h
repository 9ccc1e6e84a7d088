// `gradsync data to-shards FOLDER OUT --shard-size N`: an image folder
// (torchvision ImageFolder order) written as WebDataset shards
// OUT/shard-000000.tar, ... of N samples each: members <%08d index>.<ext>
// (the image file's bytes as they are) and <index>.cls (its class index).
// Shards read back in the folder's order (foundation/data_index/
// shard_index.h), so a folder run and a shard run can be compared exactly.
// Thread safety: one call at a time per OUT.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

struct ToShardsOptions {
  std::string folder;  // an image folder (one split: <class>/<image>)
  std::string out;     // created if missing; its shard-*.tar replaced
  int64_t shard_size = 1000;
};

// The shards written; a progress line per shard on `progress`.
// INVALID_ARGUMENT for a shard_size < 1, an image that is not .png, .jpg or
// .jpeg or is larger than a loader reads by default (named), or a folder
// ScanImageFolder refuses; an image that is not a regular file as
// RegularFile::Open (never waiting on a FIFO); DATA_LOSS naming a
// shard that cannot be written (each is written whole, durably, or not at
// all: foundation/files/durable_file.h).
absl::StatusOr<int64_t> WriteShards(const ToShardsOptions& options,
                                    std::ostream& progress);

}  // namespace gradsync
