// ShardDataset: a split held as WebDataset tar shards
// (foundation/data_index/shard_index.h): each sample an image member and
// its .cls label, decoded by image_decoder.h (an .npy array by
// npy_image.h) from the bytes read at the member's offset, with the same
// limits as image files. Errors name the
// member as "<shard>:<key>.<ext>"; a shard changed since it was indexed
// fails every read from it with DATA_LOSS.
//
// Immutable after construction; Load() is thread-safe (pread on files
// opened once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "foundation/data_index/shard_index.h"
#include "foundation/files/regular_file.h"
#include "loader/dataset.h"

namespace gradsync {

class ShardDataset : public Dataset {
 public:
  // `dir`: the split's directory of .tar shards; it and every shard must
  // lie under access.data_roots (links resolved). `channels` as
  // ImageFolderDataset. Errors as IndexShards, PERMISSION_DENIED naming a
  // path outside the roots.
  static absl::StatusOr<std::unique_ptr<ShardDataset>> Open(
      const std::string& dir, int channels, const DatasetAccess& access = {});

  int64_t size() const override { return index_.samples.size(); }
  int64_t label(int64_t i) const override { return index_.samples[i].label; }
  std::string name(int64_t i) const override;
  int num_classes() const override { return index_.num_classes; }
  absl::StatusOr<Image> Load(int64_t index) const override;

 private:
  ShardDataset(ShardIndex index, std::vector<RegularFile> files, int channels,
               DecodeLimits limits)
      : index_(std::move(index)),
        files_(std::move(files)),
        channels_(channels),
        limits_(limits) {}
  const ShardIndex index_;
  const std::vector<RegularFile> files_;  // one per shard, opened at Open
  const int channels_;
  const DecodeLimits limits_;
};

}  // namespace gradsync
