#include "loader/open_dataset.h"

#include "absl/strings/str_cat.h"
#include "foundation/data_index/image_folder_index.h"
#include "foundation/data_index/split_kind.h"
#include "foundation/data_index/synthetic_presets.h"
#include "loader/cached_dataset.h"
#include "loader/image_folder_dataset.h"
#include "loader/shard_dataset.h"
#include "loader/synthetic_dataset.h"
#include "loader/tensor_file_dataset.h"

namespace gradsync {

absl::StatusOr<std::shared_ptr<const Dataset>> OpenDataset(
    const std::string& path, const std::string& split, int channels,
    const DatasetAccess& access) {
  if (IsSyntheticPath(path)) {
    auto synthetic = SyntheticDataset::Open(path, split, channels);
    if (!synthetic.ok()) return synthetic.status();
    return std::shared_ptr<const Dataset>(std::move(*synthetic));
  }
  if (KindOfSplit(path, split) == SplitKind::kTensorFile) {
    if (channels != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "channels ", channels, " applies to images; ",
          TensorFilePath(path, split), " holds tensors, used as they are"));
    }
    auto tensors = TensorFileDataset::Open(TensorFilePath(path, split), access);
    if (!tensors.ok()) return tensors.status();
    return std::shared_ptr<const Dataset>(std::move(*tensors));
  }
  std::shared_ptr<const Dataset> dataset;
  if (KindOfSplit(path, split) == SplitKind::kShards) {
    auto shards = ShardDataset::Open(SplitPath(path, split), channels, access);
    if (!shards.ok()) return shards.status();
    dataset = std::move(*shards);
  } else {
    auto folder =
        ImageFolderDataset::Open(SplitPath(path, split), channels, access);
    if (!folder.ok()) return folder.status();
    dataset = std::move(*folder);
  }
  if (access.decoded_cache && access.decoded_cache->limit() > 0) {
    return std::shared_ptr<const Dataset>(
        std::make_shared<CachedDataset>(dataset, access.decoded_cache));
  }
  return dataset;
}

}  // namespace gradsync
