// ShmAllreduce (see shm_allreduce.h).
#include "worker/comm/shm/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/time/clock.h"

namespace gradsync {

ShmAllreduce::ShmAllreduce(std::unique_ptr<ShmSegment> segment,
                           size_t chunk_bytes, absl::Duration timeout)
    : segment_(std::move(segment)),
      chunk_bytes_(chunk_bytes),
      timeout_(timeout) {}

char* ShmAllreduce::Slot(int set, int rank) const {
  return segment_->data() +
         (static_cast<size_t>(set) * segment_->size() + rank) * chunk_bytes_;
}

absl::Status ShmAllreduce::Sum(void* data, size_t count, size_t element_size,
                               ReduceFn reduce) {
  if (count == 0) return absl::OkStatus();  // on every rank alike
  const int me = segment_->rank();
  const int size = segment_->size();
  const absl::Time deadline = absl::Now() + timeout_;
  const size_t per_chunk = chunk_bytes_ / element_size;
  // Portions start on 64-byte boundaries (whole cache lines per rank).
  const size_t align = std::max<size_t>(1, 64 / element_size);
  char* const base = static_cast<char*>(data);
  std::vector<size_t> cut(size + 1);
  for (size_t first = 0; first < count; first += per_chunk) {
    const size_t len = std::min(per_chunk, count - first);
    for (int r = 0; r < size; ++r) cut[r] = len * r / size / align * align;
    cut[size] = len;
    const int set = static_cast<int>(chunks_++ % 2);
    char* const chunk = base + first * element_size;
    char* const mine = Slot(set, me);
    const size_t lo = cut[me] * element_size;
    const size_t hi = cut[me + 1] * element_size;
    // The portions the others sum, from this rank.
    std::memcpy(mine, chunk, lo);
    std::memcpy(mine + hi, chunk + hi, len * element_size - hi);
    if (absl::Status s = segment_->Barrier(deadline); !s.ok()) return s;
    // This rank's portion: its own data plus every other rank's.
    const size_t n = cut[me + 1] - cut[me];
    for (int r = 0; r < size; ++r) {
      if (r != me) reduce(chunk + lo, chunk + lo, Slot(set, r) + lo, n);
    }
    std::memcpy(mine + lo, chunk + lo, hi - lo);
    if (absl::Status s = segment_->Barrier(deadline); !s.ok()) return s;
    for (int r = 0; r < size; ++r) {
      if (r == me) continue;
      const size_t from = cut[r] * element_size;
      std::memcpy(chunk + from, Slot(set, r) + from,
                  cut[r + 1] * element_size - from);
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
