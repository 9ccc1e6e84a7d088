#include "loader/synthetic_dataset.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "loader/sample_rng.h"

namespace gradsync {
namespace {

// The mean of channel c in quadrant q of class k's images.
uint8_t ClassColour(int k, int c, int q) {
  return static_cast<uint8_t>(
      32 + SplitMix64((static_cast<uint64_t>(k) << 8) | (c << 4) | q) % 192);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SyntheticDataset>> SyntheticDataset::Open(
    const std::string& path, const std::string& split, int channels) {
  absl::StatusOr<SyntheticPreset> preset = FindSyntheticPreset(path);
  if (!preset.ok()) return preset.status();
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  absl::StatusOr<int64_t> size = SyntheticSplitSize(*preset, split);
  if (!size.ok()) return size.status();
  const ImageShape shape{preset->rows, preset->cols,
                         channels != 0 ? channels : preset->channels};
  return std::unique_ptr<SyntheticDataset>(new SyntheticDataset(
      absl::StrCat(path, "/", split), split == "train" ? 1 : 2, *size, shape,
      preset->classes));
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
