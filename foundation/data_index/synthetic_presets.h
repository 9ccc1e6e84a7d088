// The synthetic data sets a path "synthetic:<preset>" names, as far as the
// index needs them: the image size, the classes and each split's sample
// count. The coordinator counts a synthetic job's samples from here, the
// loader (loader/synthetic_dataset.h) makes the images. No files, no data
// roots.
//   synthetic:cifar10  3x32x32, 10 classes, train 50,000, test 10,000
//   synthetic:tiny     3x12x12, 4 classes, train 512, test 128 (smoke tests)
// Thread safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

// "synthetic:" paths start with this.
inline constexpr char kSyntheticPrefix[] = "synthetic:";

struct SyntheticPreset {
  const char* name;  // "cifar10"
  int rows, cols, channels;
  int classes;
  int64_t train, test;  // samples per split
};

// Whether `path` names a synthetic data set (starts with kSyntheticPrefix).
bool IsSyntheticPath(const std::string& path);

// The preset "synthetic:<preset>" names; INVALID_ARGUMENT naming the known
// ones otherwise.
absl::StatusOr<SyntheticPreset> FindSyntheticPreset(const std::string& path);

// The sample count of `split` ("train" or "test") of `preset`; NOT_FOUND
// naming the splits for another split.
absl::StatusOr<int64_t> SyntheticSplitSize(const SyntheticPreset& preset,
                                           const std::string& split);
// The same for the preset `path` names (FindSyntheticPreset's errors).
absl::StatusOr<int64_t> SyntheticSplitSize(const std::string& path,
                                           const std::string& split);

}  // namespace gradsync
