// ShmAllreduce (see shm_allreduce.h).
#include "worker/comm/shm/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/time/clock.h"

namespace gradsync {

ShmAllreduce::ShmAllreduce(std::unique_ptr<ShmSegment> segment, int rank,
                           int size, size_t chunk_bytes, absl::Duration timeout)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(size),
      chunk_bytes_(chunk_bytes),
      timeout_(timeout) {}

char* ShmAllreduce::Slot(int set, int rank) const {
  return segment_->data() +
         (static_cast<size_t>(set) * size_ + rank) * chunk_bytes_;
}

absl::Status ShmAllreduce::Sum(void* data, size_t count, size_t element_size,
                               ReduceFn reduce) {
  if (count == 0) return absl::OkStatus();  // on every rank alike
  const absl::Time deadline = absl::Now() + timeout_;
  const size_t per_chunk = chunk_bytes_ / element_size;
  // Portions start on 64-byte boundaries (whole cache lines per rank).
  const size_t align = std::max<size_t>(1, 64 / element_size);
  char* const base = static_cast<char*>(data);
  std::vector<size_t> cut(size_ + 1);
  for (size_t first = 0; first < count; first += per_chunk) {
    const size_t len = std::min(per_chunk, count - first);
    for (int r = 0; r < size_; ++r) cut[r] = len * r / size_ / align * align;
    cut[size_] = len;
    const int set = static_cast<int>(chunks_++ % 2);
    char* const chunk = base + first * element_size;
    char* const mine = Slot(set, rank_);
    const size_t lo = cut[rank_] * element_size;
    const size_t hi = cut[rank_ + 1] * element_size;
    // The portions the others sum, from this rank.
    std::memcpy(mine, chunk, lo);
    std::memcpy(mine + hi, chunk + hi, len * element_size - hi);
    if (absl::Status s = segment_->Barrier(deadline); !s.ok()) return s;
    // This rank's portion: its own data plus every other rank's.
    const size_t n = cut[rank_ + 1] - cut[rank_];
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) reduce(chunk + lo, chunk + lo, Slot(set, r) + lo, n);
    }
    std::memcpy(mine + lo, chunk + lo, hi - lo);
    if (absl::Status s = segment_->Barrier(deadline); !s.ok()) return s;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const size_t from = cut[r] * element_size;
      std::memcpy(chunk + from, Slot(set, r) + from,
                  cut[r + 1] * element_size - from);
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
