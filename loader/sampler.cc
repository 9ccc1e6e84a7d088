#include "loader/sampler.h"

#include <numeric>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

absl::Status CheckShape(int64_t dataset_size, int world_size, int rank) {
  if (dataset_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset size must be >= 0 (got ", dataset_size, ")"));
  }
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world size must be >= 1 (got ", world_size, ")"));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank must be in [0, ", world_size, ") (got ", rank, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t DistributedNumSamples(int64_t dataset_size, int world_size,
                              bool drop_last) {
  if (drop_last && dataset_size % world_size != 0) {
    return dataset_size / world_size;
  }
  return (dataset_size + world_size - 1) / world_size;
}

std::vector<int64_t> TorchRandPerm(int64_t n, uint64_t seed) {
  // PyTorch's CPU generator is a 32-bit Mersenne Twister seeded with the low
  // 32 bits of the seed, and randperm_cpu is a forward Fisher-Yates shuffle
  // drawing one 32-bit number per position.
  std::mt19937 engine(static_cast<uint32_t>(seed));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z =
        static_cast<int64_t>(engine() % static_cast<uint64_t>(n - i));
    std::swap(perm[i], perm[z + i]);
  }
  return perm;
}

absl::StatusOr<std::vector<int64_t>> DistributedSamplerIndices(
    const SamplerOptions& o) {
  if (absl::Status s = CheckShape(o.dataset_size, o.world_size, o.rank);
      !s.ok()) {
    return s;
  }
  const int64_t n = o.dataset_size;
  const int64_t num_samples =
      DistributedNumSamples(n, o.world_size, o.drop_last);
  const int64_t total = num_samples * o.world_size;

  std::vector<int64_t> indices;
  if (o.shuffle) {
    indices = TorchRandPerm(n, static_cast<uint64_t>(o.seed + o.epoch));
  } else {
    indices.resize(static_cast<size_t>(n));
    std::iota(indices.begin(), indices.end(), 0);
  }
  if (n > 0 && total > n) {
    // Pad by cycling through the head of the list, as Python's
    // indices += (indices * ceil(pad / n))[:pad].
    const int64_t pad = total - n;
    indices.reserve(static_cast<size_t>(total));
    for (int64_t i = 0; i < pad; ++i) indices.push_back(indices[i % n]);
  } else {
    indices.resize(static_cast<size_t>(total));
  }

  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(num_samples));
  for (int64_t i = o.rank; i < total; i += o.world_size) {
    shard.push_back(indices[i]);
  }
  return shard;
}

absl::StatusOr<std::vector<int64_t>> EvalShardIndices(int64_t dataset_size,
                                                      int world_size,
                                                      int rank) {
  if (absl::Status s = CheckShape(dataset_size, world_size, rank); !s.ok()) {
    return s;
  }
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(dataset_size / world_size + 1));
  for (int64_t i = rank; i < dataset_size; i += world_size) shard.push_back(i);
  return shard;
}

}  // namespace gradsync
