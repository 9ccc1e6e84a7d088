// The gloo backend of Communicator (see gloo_communicator.h).
#include "worker/comm/gloo/gloo_communicator.h"

#include <gloo/allgatherv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "foundation/store/prefix_store.h"
#include "foundation/store/rendezvous_keys.h"
#include "worker/comm/gloo/gloo_allreduce.h"
#include "worker/comm/gloo/gloo_error.h"
#include "worker/comm/gloo/gloo_mesh.h"
#include "worker/comm/gloo/socket_shutdown.h"
#include "worker/comm/shm/shm_allreduce.h"

namespace gradsync {
namespace {

// Sum of 16-bit floats (c10::Half or c10::BFloat16), accumulated in float
// per element: gloo reduces 16-bit buffers on the wire with it.
template <typename H>
void Sum16(void* c, const void* a, const void* b, size_t n) {
  H* out = static_cast<H*>(c);
  const H* x = static_cast<const H*>(a);
  const H* y = static_cast<const H*>(b);
  for (size_t i = 0; i < n; ++i) {
    out[i] =
        static_cast<H>(static_cast<float>(x[i]) + static_cast<float>(y[i]));
  }
}

// gloo writes with writev(2), so a peer that has gone away raises SIGPIPE,
// which by default kills the process. It must surface as the pair's error
// instead. A handler someone installed is left alone.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current = {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
        current.sa_handler == SIG_DFL) {
      std::signal(SIGPIPE, SIG_IGN);
    }
  });
}

std::chrono::milliseconds Millis(absl::Duration d) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const CommOptions& o, std::shared_ptr<gloo::Context> context,
                   std::unique_ptr<GlooAllreduce> allreduce,
                   std::unique_ptr<ShmAllreduce> shm)
      : Communicator(o.rank, o.size, o.store, o.timeout),
        context_(std::move(context)),
        allreduce_(std::move(allreduce)),
        shm_(std::move(shm)) {
    // The local ends of the connected pairs, for Abort (socket_shutdown.h).
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || context_->getPair(r) == nullptr) continue;
      const auto* address = dynamic_cast<const gloo::transport::tcp::Address*>(
          &context_->getPair(r)->address());
      if (address != nullptr) pair_ends_.push_back(address->getSockaddr());
    }
  }

  // A rank that returns from its last collective may close its sockets
  // while a peer's thread has not yet woken to take the data that already
  // arrived, and gloo's waitRecv reports the closed pair before the data.
  // So ranks say goodbye through the store and close only once every peer
  // has said it (or a short grace has passed: a peer that died never will).
  ~GlooCommunicator() override {
    if (failed_) return;  // the peers have failed or will; do not wait
    if (!store_->Set(rendezvous_keys::GlooBye(size_, rank_), "1").ok()) return;
    std::vector<std::string> keys;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) keys.push_back(rendezvous_keys::GlooBye(size_, r));
    }
    (void)store_->Wait(
        keys, std::clamp(timeout_ / 4, absl::Seconds(1), absl::Seconds(10)));
  }

  Backend backend() const override { return Backend::kGloo; }
  std::string transport() const override {
    return shm_ != nullptr ? "gloo over TCP, all-reduce through shared memory"
                           : "gloo over TCP";
  }

  absl::Status AllReduce(at::Tensor& tensor, ReduceOp op) override {
    if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
      return absl::InvalidArgumentError(
          "gloo allreduce needs a contiguous CPU tensor");
    }
    GlooAllreduce::ReduceFn fn;
    switch (tensor.scalar_type()) {
      case torch::kFloat32:
        fn = static_cast<GlooAllreduce::ReduceFn>(&gloo::sum<float>);
        break;
      case torch::kHalf:
        fn = &Sum16<c10::Half>;
        break;
      case torch::kBFloat16:
        fn = &Sum16<c10::BFloat16>;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("gloo allreduce: unsupported dtype ",
                         std::string(c10::toString(tensor.scalar_type()))));
    }
    const int64_t seq = Enter();
    const absl::Status s =
        shm_ != nullptr ? shm_->Sum(tensor.data_ptr(), tensor.numel(),
                                    tensor.element_size(), fn)
                        : allreduce_->Sum(tensor.data_ptr(), tensor.numel(),
                                          tensor.element_size(), fn);
    if (!s.ok()) {
      return Failed("allreduce", seq, s);
    }
    if (op == ReduceOp::kAverage) tensor.div_(size_);
    return absl::OkStatus();
  }

  absl::Status Broadcast(at::Tensor& tensor, int root) override {
    if (root < 0 || root >= size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("broadcast root ", root, " outside [0, ", size_, ")"));
    }
    if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
      return absl::InvalidArgumentError(
          "gloo broadcast needs a contiguous CPU tensor");
    }
    const int64_t seq = Enter();
    if (tensor.numel() == 0) return absl::OkStatus();
    try {
      gloo::BroadcastOptions opts(context_);
      opts.setRoot(root);
      opts.setOutput(static_cast<uint8_t*>(tensor.data_ptr()),
                     tensor.numel() * tensor.element_size());
      opts.setTag(static_cast<uint32_t>(seq));
      opts.setTimeout(Millis(timeout_));
      gloo::broadcast(opts);
    } catch (const std::exception& e) {
      return Failed("broadcast", seq, GlooError(e));
    }
    return absl::OkStatus();
  }

  absl::Status Barrier() override {
    const int64_t seq = Enter();
    try {
      gloo::BarrierOptions opts(context_);
      opts.setTag(static_cast<uint32_t>(seq));
      opts.setTimeout(Millis(timeout_));
      gloo::barrier(opts);
    } catch (const std::exception& e) {
      return Failed("barrier", seq, GlooError(e));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> AllGather(
      const std::string& mine) override {
    const int64_t seq = Enter();
    try {
      // Sizes first, then the bytes.
      std::vector<int64_t> sizes(size_);
      int64_t my_size = static_cast<int64_t>(mine.size());
      gloo::AllgathervOptions sz(context_);
      sz.setInput(&my_size, 1);
      sz.setOutput(sizes.data(), std::vector<size_t>(size_, 1));
      sz.setTag(static_cast<uint32_t>(seq) | 0x80000000u);
      sz.setTimeout(Millis(timeout_));
      gloo::allgatherv(sz);
      const int64_t total = std::accumulate(sizes.begin(), sizes.end(), 0LL);
      std::string all(static_cast<size_t>(total), '\0');
      std::vector<size_t> counts(sizes.begin(), sizes.end());
      if (total > 0) {
        gloo::AllgathervOptions data(context_);
        data.setInput(const_cast<char*>(mine.data()), mine.size());
        data.setOutput(all.data(), counts);
        data.setTag(static_cast<uint32_t>(seq));
        data.setTimeout(Millis(timeout_));
        gloo::allgatherv(data);
      }
      std::vector<std::string> out;
      size_t offset = 0;
      for (size_t c : counts) {
        out.push_back(all.substr(offset, c));
        offset += c;
      }
      return out;
    } catch (const std::exception& e) {
      return Failed("allgather", seq, GlooError(e));
    }
  }

  bool shares_memory() const { return shm_ != nullptr; }

 protected:
  // Every pair's waiting operations fail (gloo's collectives and ours run
  // on them: their sockets are shut down), and so does the shared-memory
  // all-reduce.
  void AbortTransport() override {
    failed_ = true;  // no goodbyes: peers are failing too
    ShutdownSocketsAt(pair_ends_);
    if (shm_ != nullptr) shm_->Abandon();
  }

 private:
  absl::Status Failed(const std::string& op, int64_t seq,
                      const absl::Status& cause) {
    failed_ = true;
    return CollectiveError(op, seq, cause);
  }

  std::atomic<bool> failed_{false};
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<GlooAllreduce> allreduce_;
  std::unique_ptr<ShmAllreduce> shm_;        // null: all-reduces over TCP
  std::vector<sockaddr_storage> pair_ends_;  // local addresses of the pairs
};

// The shared-memory all-reduce of a group whose ranks all share this
// host's memory, or null (some rank could not join rank 0's segment, or the
// group is out of range). Every rank of the group calls it once the mesh is
// connected; the ranks agree through the store ("shm/joined/<rank>"), not
// the TCP pairs, which the first collective is the first to use.
absl::StatusOr<std::unique_ptr<ShmAllreduce>> JoinSharedMemory(
    const CommOptions& o, const GlooOptions& gloo,
    const std::shared_ptr<Store>& store) {
  if (o.size < 2 || o.size > gloo.shared_memory_max_ranks) return nullptr;
  ShmSegmentOptions so;
  so.rank = o.rank;
  so.size = o.size;
  so.store = store;
  so.timeout = o.timeout;
  so.data_bytes =
      ShmAllreduce::SegmentBytes(o.size, gloo.shared_memory_chunk_bytes);
  so.enabled = gloo.shared_memory;
  absl::StatusOr<std::unique_ptr<ShmSegment>> segment = ShmSegment::Join(so);
  if (absl::Status s = store->Set(rendezvous_keys::ShmJoined(o.rank),
                                  segment.ok() ? "1" : "0");
      !s.ok()) {
    return s;
  }
  std::vector<std::string> keys;
  for (int r = 0; r < o.size; ++r)
    keys.push_back(rendezvous_keys::ShmJoined(r));
  absl::StatusOr<std::vector<std::string>> joined =
      store->MultiGet(keys, o.timeout);
  if (!joined.ok()) return joined.status();
  if (!segment.ok()) return nullptr;
  (*segment)->Unlink();  // every rank has opened it, or given up
  for (const std::string& one : *joined) {
    if (one != "1") return nullptr;
  }
  return std::make_unique<ShmAllreduce>(
      std::move(*segment), gloo.shared_memory_chunk_bytes, o.timeout);
}

}  // namespace

GlooOptions GlooOptionsFromEnv() {
  GlooOptions gloo;
  const char* shm = std::getenv("GRADSYNC_GLOO_SHM");
  if (shm != nullptr && std::string(shm) == "0") gloo.shared_memory = false;
  return gloo;
}

bool AllReducesThroughSharedMemory(const Communicator& comm) {
  const auto* gloo = dynamic_cast<const GlooCommunicator*>(&comm);
  return gloo != nullptr && gloo->shares_memory();
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const CommOptions& o, const GlooOptions& gloo) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.store == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo: need 0 <= rank < size and a store (rank ", o.rank,
                     ", size ", o.size, ")"));
  }
  if (gloo.segment_bytes == 0 || gloo.segment_bytes % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo: segment size ", gloo.segment_bytes,
                     " is not a positive multiple of 4 bytes"));
  }
  if (gloo.shared_memory_chunk_bytes == 0 ||
      gloo.shared_memory_chunk_bytes % 64 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gloo: shared-memory chunk size ", gloo.shared_memory_chunk_bytes,
        " is not a positive multiple of 64 bytes"));
  }
  IgnoreSigpipe();
  // Hello round: every rank announces itself, so a rank that never shows up
  // is named instead of surfacing as a bare store timeout inside gloo.
  auto store =
      std::make_shared<PrefixStore>(rendezvous_keys::kGlooPrefix, o.store);
  if (absl::Status s =
          store->Set(rendezvous_keys::GlooHello(o.rank), o.hostname);
      !s.ok()) {
    return s;
  }
  std::vector<std::string> keys;
  for (int r = 0; r < o.size; ++r)
    keys.push_back(rendezvous_keys::GlooHello(r));
  if (absl::Status s = store->Wait(keys, o.timeout); !s.ok()) {
    std::vector<int> missing;
    for (int r = 0; r < o.size; ++r) {
      if (!store->Get(keys[r], absl::ZeroDuration()).ok()) missing.push_back(r);
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "gloo rendezvous timed out after ", absl::FormatDuration(o.timeout),
        ": rank(s) ", absl::StrJoin(missing, ", "), " of ", o.size,
        " never joined"));
  }
  GlooMeshOptions mesh;
  mesh.rank = o.rank;
  mesh.size = o.size;
  mesh.interface = o.hostname;
  mesh.store = store;
  mesh.timeout = o.timeout;
  mesh.batch_keys = gloo.bootstrap_batch_keys;
  absl::StatusOr<std::shared_ptr<gloo::Context>> context =
      ConnectGlooMesh(mesh);
  if (!context.ok()) {
    return absl::Status(
        context.status().code(),
        absl::StrCat("gloo: cannot connect rank ", o.rank, " of ", o.size,
                     " from ", o.hostname, ": ", context.status().message()));
  }
  try {
    auto allreduce =
        std::make_unique<GlooAllreduce>(*context, gloo.segment_bytes);
    // Every rank's receive buffers are registered once this returns.
    gloo::BarrierOptions barrier(*context);
    barrier.setTag(0);  // collectives use their sequence number, from 1
    barrier.setTimeout(Millis(o.timeout));
    gloo::barrier(barrier);
    absl::StatusOr<std::unique_ptr<ShmAllreduce>> shm =
        JoinSharedMemory(o, gloo, store);
    if (!shm.ok()) {
      return absl::Status(shm.status().code(),
                          absl::StrCat("gloo: rank ", o.rank, " of ", o.size,
                                       " could not agree on shared memory: ",
                                       shm.status().message()));
    }
    return std::unique_ptr<Communicator>(new GlooCommunicator(
        o, *context, std::move(allreduce), std::move(*shm)));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("gloo: cannot connect rank ",
                                               o.rank, " of ", o.size, " from ",
                                               o.hostname, ": ", e.what()));
  }
}

}  // namespace gradsync
