// WebDataset shards: a split held as <dir>/*.tar, each tar a sequence of
// samples whose members share a key (<key>.png|jpg|jpeg, or <key>.npy for a
// uint8 array, and <key>.cls with the class index as text; other members
// are ignored). Indexing reads every
// member's header (and each .cls) once, so samples are random-access by
// offset; samples come in shard-name order, then member order: what
// `gradsync data to-shards` writes from an image folder keeps its order.
//
// The index lives in the memory of whoever opens the split: the
// coordinator (to count samples) and each worker (to read them) scan their
// own copy of the shards, which costs a 512-byte read per member and needs
// no shared file system. Each shard's size and modification time are
// recorded; a reader checks them before every read (CheckShardUnchanged),
// so a shard changed under a running job fails the reads with DATA_LOSS
// naming it instead of handing out other samples.
//
// Shards are hostile: a header checksum that does not match, a member that
// runs past the end of its shard, a name that is absolute or climbs out
// with "..", a link member, a sample without an image or a .cls label (or
// with a label that is not a class index) are INVALID_ARGUMENT naming the
// shard and the member or key.
// Thread safety: pure functions over the file system.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "foundation/data_index/image_folder_index.h"

namespace gradsync {

// The most classes .cls labels may name (the largest index + 1).
inline constexpr int64_t kMaxShardClasses = int64_t{1} << 20;

struct ShardFile {
  std::string path;
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

struct ShardSample {
  int32_t shard = 0;   // into ShardIndex::shards
  std::string key;     // "<key>" as the members spell it
  std::string ext;     // the image member's extension ("png")
  int64_t offset = 0;  // of the image's bytes in the shard
  int64_t size = 0;
  int64_t label = 0;
};

struct ShardIndex {
  std::string root;               // the split's directory
  std::vector<ShardFile> shards;  // sorted by name
  std::vector<ShardSample> samples;
  int num_classes = 0;
};

// True when `dir` is a directory holding at least one *.tar entry.
bool HoldsShards(const std::string& dir);

// Indexes every *.tar of `dir` (sorted by name). INVALID_ARGUMENT as above,
// or when `dir` holds no sample; DEADLINE_EXCEEDED / CANCELLED as `budget`
// says (checked every 1,024 members).
absl::StatusOr<ShardIndex> IndexShards(const std::string& dir,
                                       const ScanBudget& budget = {});

// DATA_LOSS naming the shard when the file at shard.path no longer has the
// size and modification time it was indexed with.
absl::Status CheckShardUnchanged(const ShardFile& shard);

}  // namespace gradsync
