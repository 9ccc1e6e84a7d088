// OpenDataset: a split of whatever a data set path names, a folder of
// images, WebDataset shards, a tensor file or a "synthetic:<preset>" (the
// factory over dataset.h's implementations; foundation/data_index/split_kind.h
// decides). Thread safety: a pure function; the Dataset it returns is
// immutable.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "loader/dataset.h"

namespace gradsync {

// Split `split` of the data set `path`: SyntheticDataset::Open for a
// "synthetic:" path, TensorFileDataset::Open for <path>/<split>.pt
// (INVALID_ARGUMENT with `channels` set: tensors are used as they are),
// ShardDataset::Open where SplitPath(path, split) holds .tar shards, else
// the ImageFolderDataset at SplitPath(path, split).
// `channels` as ImageFolderDataset::Open. With data roots, the folder and
// every link its listing followed (or every shard) must resolve under one
// of them (PERMISSION_DENIED naming the path). With a decoded_cache budget
// the folder's or shards' images are cached (CachedDataset). Errors as those.
absl::StatusOr<std::shared_ptr<const Dataset>> OpenDataset(
    const std::string& path, const std::string& split, int channels,
    const DatasetAccess& access = {});

}  // namespace gradsync
