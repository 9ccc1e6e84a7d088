// ShmSegment: one block of POSIX shared memory mapped by every rank of a
// group whose ranks share a host (and its /dev/shm), with a barrier whose
// waits are bounded and name the ranks they wait for. The shared-memory
// all-reduce (shm_allreduce.h) runs on it.
//
// Joining: rank 0 creates a segment under a random name, reserves its pages
// (posix_fallocate, so a full /dev/shm is an error here and not a SIGBUS
// later), writes a random nonce into it and publishes "name nonce bytes"
// under "shm/segment" of the store (written once per group: each group
// needs a store, or prefix, of its own, as the gloo mesh's keys do). Every
// other rank reads that key, opens the name and checks the nonce: a rank on
// another host (or in a container with its own /dev/shm) cannot open it or
// finds a different segment, and Join fails for it with the reason. Ranks must
// then agree (every rank joined, or none uses the segment); the caller does
// that (the gloo communicator through the store) and rank 0 calls Unlink once
// every rank has tried.
//
// Liveness: each rank holds an open-file-description lock on byte `rank`
// of the segment's file; the kernel drops it when the process dies, so a
// waiting rank sees a killed peer within a poll interval (50 ms), not at
// its deadline.
//
// Thread safety: one thread per rank calls Barrier; Abandon may be called
// from any thread (atomics and a futex wake); Join, Unlink and the
// destructor are not concurrent with them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "foundation/store/store.h"

namespace gradsync {

struct ShmSegmentOptions {
  int rank = 0;
  int size = 1;
  std::shared_ptr<Store> store;  // shared by all ranks of the group
  absl::Duration timeout = absl::Seconds(60);  // reading rank 0's key
  size_t data_bytes = 0;  // usable bytes after the control block
  // False: this rank does not share memory (rank 0 publishes that instead
  // of a name; the others fail Join).
  bool enabled = true;
};

class ShmSegment {
 public:
  // This rank's mapping of the group's segment; an error says why this rank
  // cannot share one with rank 0 (FAILED_PRECONDITION, NOT_FOUND,
  // RESOURCE_EXHAUSTED, or the store's error reading the key).
  static absl::StatusOr<std::unique_ptr<ShmSegment>> Join(
      const ShmSegmentOptions& options);
  ~ShmSegment();  // unmaps and closes (dropping the liveness lock)

  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Rank 0: removes the segment's name (the mappings stay). Also done by
  // rank 0's destructor. No-op on other ranks.
  void Unlink();

  int rank() const { return rank_; }
  int size() const { return size_; }
  char* data() const { return data_; }
  size_t data_bytes() const { return data_bytes_; }

  // Every rank's next barrier: returns once every rank has entered it, with
  // its writes to the segment before it visible after it. Fails with
  // DEADLINE_EXCEEDED at `deadline` naming the ranks that did not arrive,
  // UNAVAILABLE naming a rank that exited or abandoned the group. After a
  // failure every later Barrier fails at once with the same error.
  absl::Status Barrier(absl::Time deadline);
  // Tells the other ranks this one gave up (their Barrier fails at once).
  void Abandon();

  struct Control;  // at the start of the segment (layout in the .cc)

 private:
  ShmSegment(int rank, int size, int fd, char* base, size_t total,
             std::string name);
  // Ranks that have not entered barrier `b`, as "1, 3".
  std::string Absent(int64_t b) const;
  // Ranks among those absent from barrier `b` whose liveness lock is gone.
  std::string Exited(int64_t b) const;
  bool AllArrived(int64_t b) const;
  absl::Status Fail(absl::Status s);

  const int rank_;
  const int size_;
  const int fd_;
  char* const base_;
  const size_t total_;
  std::string name_;  // rank 0 until unlinked; empty otherwise
  Control* const control_;
  char* const data_;
  const size_t data_bytes_;
  int64_t barrier_ = 0;  // barriers entered by this rank
  absl::Status failed_;
};

}  // namespace gradsync
