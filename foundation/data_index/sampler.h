// Distributed sampling: which sample indices each rank trains and evaluates.
//
// DistributedSamplerIndices reproduces torch.utils.data.DistributedSampler
// (PyTorch 1.13) exactly: for the same (N, W, rank, seed, epoch, shuffle,
// drop_last) it returns the same index list. The coordinator's shard planner
// and the worker's loader both use these functions, so there is one
// implementation of the semantics.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

struct SamplerOptions {
  int64_t dataset_size = 0;  // N >= 0
  int world_size = 1;        // W >= 1
  int rank = 0;              // 0 <= rank < W
  int64_t seed = 0;
  int epoch = 0;
  bool shuffle = true;
  bool drop_last = false;
};

// Samples per rank: ceil(N / W), or floor(N / W) with drop_last.
int64_t DistributedNumSamples(int64_t dataset_size, int world_size,
                              bool drop_last);

// The rank's training indices: permutation seeded with seed + epoch (when
// shuffling), padded by repeating its head (or truncated with drop_last) to
// num_samples * W, then every W-th index starting at `rank`.
// INVALID_ARGUMENT for a negative N, W < 1 or a rank outside [0, W).
absl::StatusOr<std::vector<int64_t>> DistributedSamplerIndices(
    const SamplerOptions& options);

// The epoch's sample order before padding: torch.randperm(N) seeded with
// seed + epoch when shuffling, else 0..N-1.
std::vector<int64_t> EpochOrder(int64_t dataset_size, int64_t seed, int epoch,
                                bool shuffle);

// DistributedSampler's second half over an explicit order: pad it by
// repeating its head (or truncate it with drop_last) to
// DistributedNumSamples(order.size(), W, drop_last) * W, then take every W-th
// entry from `rank`. Requires W >= 1 and 0 <= rank < W.
std::vector<int64_t> StridedShard(std::vector<int64_t> order, int world_size,
                                  int rank, bool drop_last);

// Evaluation shard: indices rank, rank + W, ... < N, in order, no padding, so
// that the ranks together cover every sample exactly once.
absl::StatusOr<std::vector<int64_t>> EvalShardIndices(int64_t dataset_size,
                                                      int world_size, int rank);

// torch.randperm(n, generator=torch.Generator().manual_seed(seed)) on CPU.
std::vector<int64_t> TorchRandPerm(int64_t n, uint64_t seed);

}  // namespace gradsync
