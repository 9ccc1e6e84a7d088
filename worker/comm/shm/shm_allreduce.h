// ShmAllreduce: the sum all-reduce of ranks that share a host, through one
// shared-memory segment (shm_segment.h) instead of TCP: what NCCL's SHM
// transport and MPI's shared-memory BTLs do for ranks on one node. Over
// loopback TCP every byte is copied into and out of the kernel on both
// sides, and the two directions of a 2-rank exchange share the cores;
// here a rank copies the bytes it contributes into the segment once and
// reads the others' straight from it (bench/README.md has the figures).
//
// Algorithm: the buffer goes through in chunks of at most `chunk_bytes`.
// Each chunk is cut into one portion per rank. A rank copies its chunk,
// less its own portion, into its slot; after a barrier it sums its portion
// (its own data plus every other slot's, in rank order of the others) into
// its buffer and copies that sum into its slot; after a second barrier it
// copies the other portions' sums out of the other slots. Each portion is
// summed once, by one rank, so every rank ends with the same bits. Slots
// alternate between two sets, so chunk k+1's copies start while slower
// ranks still read chunk k: two barriers per chunk.
//
// Contract: every rank of the segment constructs one with the same
// chunk_bytes over a segment of at least SegmentBytes(size, chunk_bytes)
// data bytes, and calls Sum in the same order with the same count and
// element size. A Sum fails (naming the ranks it waited for, or the one
// that exited) at now + timeout; after a failure every later Sum fails.
//
// Thread safety: one thread calls Sum at a time; Abandon from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "worker/comm/shm/shm_segment.h"

namespace gradsync {

class ShmAllreduce {
 public:
  // c[i] = a[i] + b[i] for n elements; c may alias a or b (the same type as
  // GlooAllreduce::ReduceFn).
  using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

  // Data bytes a group of `size` ranks needs: two sets of one slot each.
  static size_t SegmentBytes(int size, size_t chunk_bytes) {
    return 2 * static_cast<size_t>(size) * chunk_bytes;
  }

  // chunk_bytes: a positive multiple of 64. The rank and group size are
  // the segment's.
  ShmAllreduce(std::unique_ptr<ShmSegment> segment, size_t chunk_bytes,
               absl::Duration timeout);

  // Sums `count` elements of `element_size` bytes at `data` over all ranks,
  // in place.
  absl::Status Sum(void* data, size_t count, size_t element_size,
                   ReduceFn reduce);

  // Makes the Sum in flight, and every later one, fail at once (the other
  // ranks' too: this rank gave up). Any thread.
  void Abandon() { segment_->Abandon(); }

 private:
  char* Slot(int set, int rank) const;

  const std::unique_ptr<ShmSegment> segment_;
  const size_t chunk_bytes_;
  const absl::Duration timeout_;
  int64_t chunks_ = 0;  // chunks summed so far: chunk k uses set k % 2
};

}  // namespace gradsync
