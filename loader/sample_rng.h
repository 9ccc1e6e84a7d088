// SampleRng: the random stream of one sample's augmentation. Seeded from
// (base seed, epoch, position in the epoch), so a sample's augmentation does
// not depend on which loader thread handles it: a run is reproducible
// whatever the thread count. Not thread-safe; one per sample.
#pragma once

#include <cstdint>
#include <random>

namespace gradsync {

// splitmix64's finaliser: maps nearby seeds to unrelated 64-bit values.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SampleRng {
 public:
  SampleRng(uint64_t seed, int64_t epoch, int64_t position)
      : engine_(SplitMix64(
            SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(epoch)) ^
            static_cast<uint64_t>(position))) {}

  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * std::generate_canonical<double, 53>(engine_);
  }
  // Uniform integer in [lo, hi].
  int64_t UniformInt(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
  }
  bool Bernoulli(double p) { return Uniform(0, 1) < p; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace gradsync
