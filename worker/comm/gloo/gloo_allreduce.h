// GlooAllreduce: the sum all-reduce of the gloo communicator, over the TCP
// pairs of a connected gloo context.
//
// Why not gloo::allreduce: it moves every segment through per-call unbound
// buffers, so each transfer first waits for the receiver's ready-to-receive
// notice (a round trip through both ranks' device threads). Here each rank
// registers one receive buffer per peer once (gloo's slot Buffer API) and a
// sender writes straight into it. Credits (an 8-byte message back per
// consumed segment) keep at most two segments in flight per direction, one
// per half of the receive buffer.
//
// Algorithm: a buffer of at most `segment_bytes` goes to every peer in one
// message and each rank sums all contributions in rank order. Larger buffers
// run a ring reduce-scatter (segments of at most `segment_bytes`, segment
// j+1 on the wire while segment j is added) then a ring all-gather, whose
// segments land straight in the caller's buffer (registered per call; no
// credits needed, no copy). Either way every rank ends with bitwise
// identical values. bench/README.md has the measurements against
// gloo::allreduce (through torch) and the choice of segment size.
//
// Contract: every rank of the context constructs one at the same point (the
// constructor exchanges a message with its peers), with the same
// segment_bytes, and all ranks pass a barrier before the first Sum (a
// segment that arrives before its receive buffer is registered stalls the
// receiver's device thread until it is). All ranks call Sum in the same
// order with the same count and element size. Waits are bounded by the
// context's timeout; after a failure the pairs are closed and the object is
// unusable, as with gloo's own collectives.
//
// Thread safety: one thread calls Sum at a time.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/buffer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace gradsync {

class GlooAllreduce {
 public:
  // c[i] = a[i] + b[i] for n elements; c may alias a or b.
  using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

  // Registers the receive buffers on every pair of `context` (throws gloo's
  // exceptions, as context setup does). segment_bytes must be a positive
  // multiple of every element size used later.
  GlooAllreduce(std::shared_ptr<gloo::Context> context, size_t segment_bytes);
  ~GlooAllreduce();

  // Sums `count` elements of `element_size` bytes at `data` over all ranks,
  // in place. On failure gloo's message (which names the peer), as
  // DEADLINE_EXCEEDED when a wait expired and UNAVAILABLE otherwise
  // (gloo_error.h).
  absl::Status Sum(void* data, size_t count, size_t element_size,
                   ReduceFn reduce);

 private:
  struct Peer;

  // Sends one segment-sized message each way on every pair Sum uses, before
  // anything else. gloo's Pair::send sets the socket's SO_SNDBUF to the
  // largest message sent so far from a registered buffer, which also turns
  // off the kernel's send-buffer autotuning. Were Sum's first message on a
  // pair 8 bytes (a credit, a one-float sum), the pair would keep a ~4.6 KB
  // send buffer, and an 18 MB gloo broadcast over it would take seconds
  // instead of milliseconds (GlooLargeBroadcastTest).
  void Prime();
  void SumDirect(char* data, size_t count, size_t element_size,
                 ReduceFn reduce);
  void SumRing(char* data, size_t count, size_t element_size, ReduceFn reduce);
  // Makes `data` (this call's buffer) the source of segments to `peer`.
  void OpenOut(int peer, char* data, size_t bytes);
  // Writes [offset, offset + bytes) of the current call's data to `peer`,
  // into the next half of its receive buffer once that half is free.
  void Send(int peer, size_t offset, size_t bytes);
  // Waits for the next segment from `peer`; it stays valid until Release.
  const char* Receive(int peer);
  // Hands the oldest received segment's half back to `peer` now.
  void Release(int peer);
  // Sends every credit owed to `peer` (released now or at the end of the
  // last call).
  void PayCredits(Peer& peer);
  // Waits until every Send of this call has left for the socket (before
  // the data it came from is overwritten or handed back to the caller).
  void FinishSends();

  const std::shared_ptr<gloo::Context> context_;
  const size_t segment_bytes_;
  std::vector<std::unique_ptr<Peer>> peers_;  // indexed by rank; own is null
  std::vector<char> sum_;  // rank-order partial sums (direct, 3+ ranks)
};

}  // namespace gradsync
