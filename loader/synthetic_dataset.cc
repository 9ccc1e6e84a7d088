#include "loader/synthetic_dataset.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "loader/sample_rng.h"

namespace gradsync {
namespace {

struct Preset {
  const char* name;
  ImageShape shape;
  int classes;
  int64_t train, test;
};

constexpr Preset kPresets[] = {
    {"cifar10", {32, 32, 3}, 10, 50000, 10000},
    {"tiny", {12, 12, 3}, 4, 512, 128},  // smoke tests
};

// The mean of channel c in quadrant q of class k's images.
uint8_t ClassColour(int k, int c, int q) {
  return static_cast<uint8_t>(
      32 + SplitMix64((static_cast<uint64_t>(k) << 8) | (c << 4) | q) % 192);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SyntheticDataset>> SyntheticDataset::Open(
    const std::string& path, const std::string& split, int channels) {
  if (!absl::StartsWith(path, kSyntheticPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a synthetic data set (synthetic:<preset>)"));
  }
  const std::string preset = path.substr(sizeof(kSyntheticPrefix) - 1);
  const Preset* p = nullptr;
  std::string known;
  for (const Preset& candidate : kPresets) {
    if (preset == candidate.name) p = &candidate;
    absl::StrAppend(&known, known.empty() ? "" : ", ",
                    "synthetic:", candidate.name);
  }
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown synthetic data set '", path, "' (known: ", known, ")"));
  }
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  int64_t size = 0;
  if (split == "train") {
    size = p->train;
  } else if (split == "test") {
    size = p->test;
  } else {
    return absl::NotFoundError(absl::StrCat(path, " has no split '", split,
                                            "' (splits: train, test)"));
  }
  ImageShape shape = p->shape;
  if (channels != 0) shape.channels = channels;
  return std::unique_ptr<SyntheticDataset>(
      new SyntheticDataset(absl::StrCat(path, "/", split),
                           split == "train" ? 1 : 2, size, shape, p->classes));
}

int64_t SyntheticDataset::label(int64_t index) const {
  return static_cast<int64_t>(
      SplitMix64(salt_ ^ SplitMix64(static_cast<uint64_t>(index))) %
      static_cast<uint64_t>(classes_));
}

std::string SyntheticDataset::name(int64_t index) const {
  return absl::StrCat(name_, "/", index);
}

absl::StatusOr<Image> SyntheticDataset::Load(int64_t index) const {
  if (index < 0 || index >= size_) {
    return absl::OutOfRangeError(
        absl::StrCat("sample index ", index, " outside [0, ", size_, ")"));
  }
  const int k = static_cast<int>(label(index));
  Image image(shape_.rows, shape_.cols, shape_.channels);
  // Noise in [-48, 47] from one 64-bit state per image (xorshift64*).
  uint64_t state = SplitMix64(salt_ + 0x5eed + static_cast<uint64_t>(index));
  for (int y = 0; y < shape_.rows; ++y) {
    for (int x = 0; x < shape_.cols; ++x) {
      const int q = (2 * y / shape_.rows) * 2 + 2 * x / shape_.cols;
      uint8_t* pixel = image.at(y, x);
      for (int c = 0; c < shape_.channels; ++c) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        const int noise =
            static_cast<int>((state * 0x2545F4914F6CDD1DULL) >> 57) - 64;
        pixel[c] = static_cast<uint8_t>(
            std::clamp(ClassColour(k, c, q) + noise * 3 / 4, 0, 255));
      }
    }
  }
  return image;
}

}  // namespace gradsync
