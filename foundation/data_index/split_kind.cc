#include "foundation/data_index/split_kind.h"

#include <filesystem>
#include <system_error>

#include "foundation/data_index/image_folder_index.h"
#include "foundation/data_index/shard_index.h"
#include "foundation/data_index/synthetic_presets.h"

namespace gradsync {

std::string TensorFilePath(const std::string& path, const std::string& split) {
  if (split.empty()) return path;
  return (std::filesystem::path(path) / (split + ".pt")).string();
}

SplitKind KindOfSplit(const std::string& path, const std::string& split) {
  if (IsSyntheticPath(path)) return SplitKind::kSynthetic;
  std::error_code error;
  const auto status =
      std::filesystem::status(TensorFilePath(path, split), error);
  if (!error && std::filesystem::exists(status) &&
      !std::filesystem::is_directory(status)) {
    return SplitKind::kTensorFile;
  }
  if (HoldsShards(SplitPath(path, split))) return SplitKind::kShards;
  return SplitKind::kImageFolder;
}

}  // namespace gradsync
