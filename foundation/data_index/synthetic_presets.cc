#include "foundation/data_index/synthetic_presets.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

constexpr SyntheticPreset kPresets[] = {
    {"cifar10", 32, 32, 3, 10, 50000, 10000},
    {"tiny", 12, 12, 3, 4, 512, 128},  // smoke tests
};

}  // namespace

bool IsSyntheticPath(const std::string& path) {
  return absl::StartsWith(path, kSyntheticPrefix);
}

absl::StatusOr<SyntheticPreset> FindSyntheticPreset(const std::string& path) {
  if (!IsSyntheticPath(path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a synthetic data set (synthetic:<preset>)"));
  }
  const std::string name = path.substr(sizeof(kSyntheticPrefix) - 1);
  std::string known;
  for (const SyntheticPreset& preset : kPresets) {
    if (name == preset.name) return preset;
    absl::StrAppend(&known, known.empty() ? "" : ", ", kSyntheticPrefix,
                    preset.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown synthetic data set '", path, "' (known: ", known, ")"));
}

absl::StatusOr<int64_t> SyntheticSplitSize(const SyntheticPreset& preset,
                                           const std::string& split) {
  if (split == "train") return preset.train;
  if (split == "test") return preset.test;
  return absl::NotFoundError(absl::StrCat(kSyntheticPrefix, preset.name,
                                          " has no split '", split,
                                          "' (splits: train, test)"));
}

absl::StatusOr<int64_t> SyntheticSplitSize(const std::string& path,
                                           const std::string& split) {
  absl::StatusOr<SyntheticPreset> preset = FindSyntheticPreset(path);
  if (!preset.ok()) return preset.status();
  return SyntheticSplitSize(*preset, split);
}

}  // namespace gradsync
