#include "worker/comm/gloo/gloo_allreduce.h"

#include <algorithm>
#include <exception>

#include "worker/comm/gloo/gloo_error.h"

namespace gradsync {
namespace {

// Slot numbers of the registered buffers. gloo's own collectives use slots
// with a nonzero prefix byte at bit 56, so these small ones never collide.
// Each direction has its own slot: destroying a send buffer unregisters its
// slot on the pair, which must not be a receive slot of this rank.
constexpr int kSlotBase = 1 << 20;
int DataSlot(int from, int to, int size) {
  return kSlotBase + 4 * (from * size + to);
}
int CreditSlot(int from, int to, int size) {
  return DataSlot(from, to, size) + 1;
}
int GatherSlot(int from, int to, int size) {
  return DataSlot(from, to, size) + 2;
}
int PrimeSlot(int from, int to, int size) {
  return DataSlot(from, to, size) + 3;
}

// Beyond this many ranks only the ring runs, and only the left neighbour's
// receive buffer is registered (the direct path needs one per peer).
constexpr int kMaxDirectRanks = 8;

}  // namespace

struct GlooAllreduce::Peer {
  // Segments from this peer land here, alternating between two halves.
  std::unique_ptr<char[]> landing;
  std::unique_ptr<gloo::transport::Buffer> in;
  uint64_t credit_in = 0;  // credits from this peer land here (ignored)
  std::unique_ptr<gloo::transport::Buffer> credits_in;
  uint64_t credit_out = 0;
  std::unique_ptr<gloo::transport::Buffer> credits_out;
  // This call's data, as a source for segments to this peer.
  std::unique_ptr<gloo::transport::Buffer> out;
  int sends_pending = 0;  // sends of `out` not yet waited for
  uint64_t sent = 0;      // segments sent to this peer, ever
  uint64_t credits = 0;   // credits taken from this peer, ever
  uint64_t received = 0;  // segments received from this peer, ever
  int owed = 0;           // credits for released segments not yet sent
};

GlooAllreduce::GlooAllreduce(std::shared_ptr<gloo::Context> context,
                             size_t segment_bytes)
    : context_(std::move(context)), segment_bytes_(segment_bytes) {
  const int size = context_->size;
  const int rank = context_->rank;
  const int left = (rank + size - 1) % size;
  peers_.resize(size);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    auto peer = std::make_unique<Peer>();
    auto& pair = context_->getPair(p);
    if (size <= kMaxDirectRanks || p == left) {
      // Zeroed, so its pages are in place before the first segment.
      peer->landing = std::make_unique<char[]>(2 * segment_bytes_);
      peer->in = pair->createRecvBuffer(
          DataSlot(p, rank, size), peer->landing.get(), 2 * segment_bytes_);
    }
    peer->credits_in = pair->createRecvBuffer(
        CreditSlot(p, rank, size), &peer->credit_in, sizeof(uint64_t));
    peer->credits_out = pair->createSendBuffer(
        CreditSlot(rank, p, size), &peer->credit_out, sizeof(uint64_t));
    peers_[p] = std::move(peer);
  }
  if (size > 2 && size <= kMaxDirectRanks) sum_.resize(segment_bytes_);
  Prime();
}

void GlooAllreduce::Prime() {
  const int size = context_->size;
  const int rank = context_->rank;
  const int left = (rank + size - 1) % size;
  const int right = (rank + 1) % size;
  // The pairs Sum sends on: every peer (direct path), or the ring's two
  // neighbours (data right, credits left). The relation is symmetric, so
  // each of them primes towards this rank too.
  std::vector<int> peers;
  for (int p = 0; p < size; ++p) {
    if (p != rank && (size <= kMaxDirectRanks || p == left || p == right)) {
      peers.push_back(p);
    }
  }
  const std::vector<char> zeros(segment_bytes_);
  std::vector<std::unique_ptr<char[]>> landing;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> in, out;
  for (int p : peers) {
    landing.push_back(std::make_unique<char[]>(segment_bytes_));
    in.push_back(context_->getPair(p)->createRecvBuffer(
        PrimeSlot(p, rank, size), landing.back().get(), segment_bytes_));
  }
  for (int p : peers) {
    out.push_back(context_->getPair(p)->createSendBuffer(
        PrimeSlot(rank, p, size), const_cast<char*>(zeros.data()),
        segment_bytes_));
    out.back()->send(0, segment_bytes_, 0);
  }
  for (auto& b : in) b->waitRecv();
  for (auto& b : out) b->waitSend();
}

GlooAllreduce::~GlooAllreduce() = default;

absl::Status GlooAllreduce::Sum(void* data, size_t count, size_t element_size,
                                ReduceFn reduce) {
  if (context_->size == 1 || count == 0) return absl::OkStatus();
  char* bytes = static_cast<char*>(data);
  try {
    for (auto& peer : peers_) {
      if (peer != nullptr) PayCredits(*peer);
    }
    if (count * element_size <= segment_bytes_ &&
        context_->size <= kMaxDirectRanks) {
      SumDirect(bytes, count, element_size, reduce);
    } else {
      SumRing(bytes, count, element_size, reduce);
    }
    for (auto& peer : peers_) {
      if (peer != nullptr) peer->out.reset();
    }
  } catch (const std::exception& e) {
    return GlooError(e);
  }
  return absl::OkStatus();
}

void GlooAllreduce::SumDirect(char* data, size_t count, size_t element_size,
                              ReduceFn reduce) {
  const int size = context_->size;
  const int rank = context_->rank;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    OpenOut(p, data, count * element_size);
    Send(p, 0, count * element_size);
  }
  std::vector<const char*> x(size, data);
  for (int p = 0; p < size; ++p) {
    if (p != rank) x[p] = Receive(p);
  }
  FinishSends();  // `data` is about to change
  // ((x0 + x1) + x2) + ... in this order on every rank.
  if (size == 2) {
    reduce(data, x[0], x[1], count);
  } else {
    reduce(sum_.data(), x[0], x[1], count);
    for (int i = 2; i < size - 1; ++i) {
      reduce(sum_.data(), sum_.data(), x[i], count);
    }
    reduce(data, sum_.data(), x[size - 1], count);
  }
  // The peers may have finished this call and gone: their credits wait for
  // the next call (the next time a peer can need them).
  for (int p = 0; p < size; ++p) {
    if (p != rank) ++peers_[p]->owed;
  }
}

void GlooAllreduce::SumRing(char* data, size_t count, size_t element_size,
                            ReduceFn reduce) {
  const int size = context_->size;
  const int rank = context_->rank;
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  // Chunk c holds elements [count * c / size, count * (c + 1) / size); each
  // chunk moves in `segments` segments of at most `per_segment` elements
  // (trailing ones empty for a shorter chunk, on both sides alike).
  const size_t per_segment = segment_bytes_ / element_size;
  const size_t longest = (count + size - 1) / size;
  const size_t segments = (longest + per_segment - 1) / per_segment;
  struct Range {
    size_t offset;  // bytes into data
    size_t bytes;
  };
  auto segment = [&](int chunk, size_t j) {
    const size_t begin = count * chunk / size;
    const size_t end = count * (chunk + 1) / size;
    const size_t first = std::min(end, begin + j * per_segment);
    const size_t last = std::min(end, first + per_segment);
    return Range{first * element_size, (last - first) * element_size};
  };
  OpenOut(right, data, count * element_size);
  // The all-gather writes straight into `data`: registered now, before
  // this rank sends anything, so before the left neighbour can get that far.
  auto gather_in = context_->getPair(left)->createRecvBuffer(
      GatherSlot(left, rank, size), data, count * element_size);
  auto gather_out = context_->getPair(right)->createSendBuffer(
      GatherSlot(rank, right, size), data, count * element_size);
  int gather_sends = 0;
  auto gather_send = [&](int chunk, size_t j) {
    const Range r = segment(chunk, j);
    if (r.bytes == 0) return;
    gather_out->send(r.offset, r.bytes, r.offset);
    ++gather_sends;
  };

  // Reduce-scatter: step s sends chunk rank - s to the right (one segment
  // ahead) and adds chunk rank - s - 1 from the left; after it, chunk
  // rank + 1 here is the full sum.
  for (int s = 0; s < size - 1; ++s) {
    const int out = (rank - s + size) % size;
    const int in = (rank - s - 1 + size) % size;
    auto send = [&](size_t j) {
      const Range r = segment(out, j);
      if (r.bytes > 0) Send(right, r.offset, r.bytes);
    };
    send(0);
    for (size_t j = 0; j < segments; ++j) {
      if (j + 1 < segments) send(j + 1);
      const Range r = segment(in, j);
      if (r.bytes == 0) continue;
      const char* from = Receive(left);
      char* to = data + r.offset;
      reduce(to, to, from, r.bytes / element_size);
      Release(left);
    }
  }
  FinishSends();  // the all-gather overwrites chunks sent above
  // All-gather: send chunk rank + 1, then pass each arriving segment on
  // (all but the last chunk to arrive, which came from the right's side).
  for (size_t j = 0; j < segments; ++j) gather_send((rank + 1) % size, j);
  for (int s = 0; s < size - 1; ++s) {
    const int in = (rank - s + size) % size;
    for (size_t j = 0; j < segments; ++j) {
      if (segment(in, j).bytes == 0) continue;
      gather_in->waitRecv();
      if (s < size - 2) gather_send(in, j);
    }
  }
  for (; gather_sends > 0; --gather_sends) gather_out->waitSend();
}

void GlooAllreduce::OpenOut(int peer, char* data, size_t bytes) {
  peers_[peer]->out = context_->getPair(peer)->createSendBuffer(
      DataSlot(context_->rank, peer, context_->size), data, bytes);
}

void GlooAllreduce::Send(int peer, size_t offset, size_t bytes) {
  Peer& p = *peers_[peer];
  // Two halves: segment k may go once the peer released segment k - 2.
  while (p.sent >= p.credits + 2) {
    p.credits_in->waitRecv();
    ++p.credits;
  }
  p.out->send(offset, bytes, (p.sent % 2) * segment_bytes_);
  ++p.sent;
  ++p.sends_pending;
}

const char* GlooAllreduce::Receive(int peer) {
  Peer& p = *peers_[peer];
  p.in->waitRecv();
  return p.landing.get() + (p.received++ % 2) * segment_bytes_;
}

void GlooAllreduce::Release(int peer) {
  Peer& p = *peers_[peer];
  ++p.owed;
  PayCredits(p);
}

void GlooAllreduce::PayCredits(Peer& peer) {
  for (; peer.owed > 0; --peer.owed) {
    peer.credits_out->send(0, sizeof(uint64_t));
    peer.credits_out->waitSend();
  }
}

void GlooAllreduce::FinishSends() {
  for (auto& p : peers_) {
    if (p == nullptr || p->out == nullptr) continue;
    for (; p->sends_pending > 0; --p->sends_pending) p->out->waitSend();
  }
}

}  // namespace gradsync
