// The gloo backend of Communicator (../communicator.h): libgloo's TCP
// transport, a full mesh between the ranks (gloo_mesh.h), rendezvous
// through the Store.
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
};

// CreateCommunicator(Backend::kGloo, options) with default GlooOptions;
// tests and benchmarks that tune the options call it directly.
absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const CommOptions& options, const GlooOptions& gloo = {});

}  // namespace gradsync
