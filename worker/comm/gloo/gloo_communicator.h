// The gloo backend of Communicator (../communicator.h): libgloo's TCP
// transport, a full mesh between the ranks (gloo_mesh.h), rendezvous
// through the Store. When every rank of the group shares this host's
// /dev/shm, all-reduces go through shared memory instead
// (../shm/shm_allreduce.h); the ranks agree on that through the store when
// the communicator is made (every rank joined rank 0's segment, or none
// uses it), and the other collectives stay on TCP. GRADSYNC_GLOO_SHM=0 in
// the environment turns it off (as NCCL_SHM_DISABLE=1 does for NCCL).
// CPU tensors only. gloo reports failures by throwing; they are caught in
// this backend and become Status values (a gloo timeout DEADLINE_EXCEEDED,
// any other transport failure UNAVAILABLE).
//
// Creating one sets SIGPIPE to ignored if it is at its default: a peer that
// went away is an error of the collective, not the end of the process.
// Thread safety: as Communicator.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"

namespace gradsync {

struct GlooOptions {
  // All-reduce: buffers up to this size go to every peer in one message;
  // larger ones run the ring in segments of this size. A positive multiple
  // of 4 (see gloo_allreduce.h; bench/README.md for the choice).
  size_t segment_bytes = 512 << 10;
  // Bootstrap: peers' addresses read per Store::MultiGet (gloo_mesh.h).
  int bootstrap_batch_keys = 128;
  // All-reduce through shared memory when all ranks share it (and there
  // are at most shared_memory_max_ranks of them), in chunks of
  // shared_memory_chunk_bytes (a positive multiple of 64): the segment
  // holds 2 x ranks x chunk bytes.
  bool shared_memory = true;
  int shared_memory_max_ranks = 32;
  size_t shared_memory_chunk_bytes = 512 << 10;
};

// GlooOptions with shared_memory off when GRADSYNC_GLOO_SHM is "0" (what
// CreateCommunicator uses).
GlooOptions GlooOptionsFromEnv();

// Whether `comm` (a gloo communicator) all-reduces through shared memory.
bool AllReducesThroughSharedMemory(const Communicator& comm);

// CreateCommunicator(Backend::kGloo, options) with GlooOptionsFromEnv();
// tests and benchmarks that tune the options call it directly (the default
// here is GlooOptions{}, which ignores the environment).
absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const CommOptions& options, const GlooOptions& gloo = {});

}  // namespace gradsync
