// The bootstrap of one large job, measured: every rank puts its address
// into the store, reads every peer's address and meets the others at a
// barrier. Once against a gradsync coordinator (the ranks are simulated
// workers that get their rank from the scheduler), once against c10d's
// TCPStore from LibTorch, the way torchrun's c10d rendezvous and a
// process group's bootstrap use it. One thread per rank on both sides.
//
// And the bootstrap of real gloo communicators, ours (gloo_mesh.h) through
// the coordinator against c10d's ProcessGroupGloo through a TCPStore.
//
// Thread-compatible: call one at a time.
#pragma once

#include <string>

namespace gradsync::bench {

struct RendezvousResult {
  int ranks = 0;
  int errors = 0;  // ranks that failed a step (first error kept)
  std::string first_error;
  double assigned_ms = 0;   // start to the last rank knowing its rank
  double addresses_ms = 0;  // start to the last rank holding every address
  double barrier_ms = 0;    // start to the last rank past the barrier
  // The coordinator's CPU seconds and peak resident memory over the run
  // (gradsync only).
  double server_cpu_seconds = 0;
  double server_peak_rss_mb = 0;
};

// Starts `coordinator_binary`, registers `ranks` simulated workers (8 per
// host, one channel per host), submits a `ranks`-rank job and times from
// the submission: each rank's heartbeat that brings its assignment, its
// StoreSet of addr/<rank>, one StoreMultiGet of all addresses and one
// Barrier.
RendezvousResult GradsyncRendezvous(const std::string& coordinator_binary,
                                    int ranks, const std::string& dataset);

// The same against a TCPStore server in this process: each rank connects a
// client, sets addr/<rank>, waits for all addresses and gets each one
// (this LibTorch's TCPStore has no multi-get), then add + wait as c10d's
// store barrier does. Returns errors = ranks and a note when LibTorch was
// not built in.
RendezvousResult TcpStoreRendezvous(int ranks);

// As GradsyncRendezvous, but each rank makes the gloo communicator a worker
// makes (through its RemoteStore: the hello round, the mesh, gloo's
// barrier), then all-reduces one float. addresses_ms: the last rank's
// communicator made; barrier_ms: the last rank's all-reduce done.
RendezvousResult GradsyncGlooBootstrap(const std::string& coordinator_binary,
                                       int ranks, const std::string& dataset);

// The same with c10d: each rank connects a TCPStore client and constructs
// a ProcessGroupGloo (one device on loopback, one thread), whose
// constructor runs gloo's connectFullMesh through the store, then
// all-reduces one float. Needs LibTorch and gloo (errors = ranks and a note
// otherwise).
RendezvousResult TorchGlooBootstrap(int ranks);

}  // namespace gradsync::bench
