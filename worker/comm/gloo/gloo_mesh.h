// ConnectGlooMesh: the full mesh of TCP pairs a gloo communicator runs on,
// bootstrapped through a gradsync Store with a few batched reads per rank.
//
// Why not gloo::rendezvous::Context::connectFullMesh: in the libgloo that
// Debian ships, each rank publishes the full address (a sockaddr_storage
// and a sequence number, 136 bytes) of every one of its pairs under its own
// key, and every rank reads every peer's key with a wait and a get each, so
// n ranks make 2n(n-1) store calls and read 136 n^2 (n-1) bytes in all:
// 145 GB out of the store at 1,024 ranks. Here each rank publishes the
// address its pairs listen on once and one 2-byte port per peer (each pair
// listens on a port of its own), and reads the peers' keys with
// Store::MultiGet in batches (one RPC each through the coordinator):
// ceil((n - 1) / batch) reads per rank, about 2 n^2 bytes in a rank's
// reads (2 MB at 1,024 ranks).
//
// Contract: every rank of the group calls it with the same size, store and
// batch_keys and distinct ranks; the hostnames decide each pair's local
// rank as gloo's do. Reading the peers' keys takes at most `timeout` in
// all, each connect at most `timeout`; a rank whose key never appears
// fails the call with the store's DEADLINE_EXCEEDED naming its key.
// Keys are written under "mesh/" of `store`, once per group.
// Thread safety: one call per rank; the store must be thread-safe.
#pragma once

#include <gloo/context.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "foundation/store/store.h"

namespace gradsync {

struct GlooMeshOptions {
  int rank = 0;
  int size = 1;
  // Interface (name or address) the rank's gloo device binds to.
  std::string interface = "127.0.0.1";
  std::shared_ptr<Store> store;
  absl::Duration timeout = absl::Seconds(60);
  // Peers' keys read per MultiGet; at least 1.
  int batch_keys = 128;
};

// A gloo context with a connected pair to every other rank and its timeout
// set. Transport failures (gloo's exceptions) become UNAVAILABLE or
// DEADLINE_EXCEEDED (gloo_error.h).
absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooMesh(
    const GlooMeshOptions& options);

}  // namespace gradsync
