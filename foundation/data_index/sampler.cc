#include "foundation/data_index/sampler.h"

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
  return dataset_size / world_size + (dataset_size % world_size != 0);
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

std::vector<int64_t> EpochOrder(int64_t dataset_size, int64_t seed, int epoch,
                                bool shuffle) {
  // seed + epoch as Python computes it, modulo 2^64 (no signed overflow for
  // a seed near INT64_MAX); only the low bits seed the generator.
  if (shuffle) {
    return TorchRandPerm(dataset_size, static_cast<uint64_t>(seed) +
                                           static_cast<uint64_t>(epoch));
  }
  std::vector<int64_t> order(static_cast<size_t>(dataset_size));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int64_t> StridedShard(std::vector<int64_t> order, int world_size,
                                  int rank, bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t num_samples = DistributedNumSamples(n, world_size, drop_last);
  const int64_t total = num_samples * world_size;
  if (n > 0 && total > n) {
    // Pad by cycling through the head of the list, as Python's
    // indices += (indices * ceil(pad / n))[:pad].
    const int64_t pad = total - n;
    order.reserve(static_cast<size_t>(total));
    for (int64_t i = 0; i < pad; ++i) order.push_back(order[i % n]);
  } else {
    order.resize(static_cast<size_t>(total));
  }
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(num_samples));
  for (int64_t i = rank; i < total; i += world_size) shard.push_back(order[i]);
  return shard;
}

absl::StatusOr<std::vector<int64_t>> DistributedSamplerIndices(
    const SamplerOptions& o) {
  if (absl::Status s = CheckShape(o.dataset_size, o.world_size, o.rank);
      !s.ok()) {
    return s;
  }
  return StridedShard(EpochOrder(o.dataset_size, o.seed, o.epoch, o.shuffle),
                      o.world_size, o.rank, o.drop_last);
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
