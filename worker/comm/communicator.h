// Communicator: collectives among the ranks of one job attempt, behind one
// interface (like c10d's Backend), picked at run time with
// CreateCommunicator (create_communicator.h): Backend::kGloo (libgloo TCP
// transport, gloo/) for CPU tensors, Backend::kNccl (nccl/) for CUDA
// tensors. Bootstrap goes through a
// Store (foundation/store/store.h): gloo's rendezvous, and NCCL's unique id
// published by rank 0.
//
// Every collective has a deadline (CommOptions::timeout). On expiry it
// fails with DEADLINE_EXCEEDED naming the operation, its sequence number and
// the ranks that did not arrive: each timed-out rank marks its arrival in
// the store, waits a short grace for the other live ranks' marks, and names
// the ranks whose mark is missing. A failure that is not a timeout (a peer
// closed its connection) is UNAVAILABLE, named the same way.
//
// Abort() ends the collective in flight and every later one at once, with
// ABORTED: when the coordinator ends an attempt (a peer died or hangs), the
// ranks left leave their collective at once instead of at its deadline
// (what ProcessGroupNCCL's abort and torchrun's stopping of workers do).
//
// Thread safety: one thread at a time issues the collectives of a
// communicator (as with gloo and NCCL communicators themselves): the
// reducer's launches from autograd hooks happen while the training thread
// waits in backward(); rank(), size(), sequence(), Abort() and aborted()
// may be called from any thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "foundation/store/store.h"

namespace gradsync {

enum class ReduceOp { kSum, kAverage };

enum class Backend { kGloo, kNccl };
// "gloo" or "nccl".
const char* BackendName(Backend backend);

struct CommOptions {
  int rank = 0;
  int size = 1;
  std::shared_ptr<Store> store;  // shared by all ranks of the group
  absl::Duration timeout = absl::Seconds(60);  // per collective
  std::string hostname = "127.0.0.1";  // address peers reach this rank at
  int cuda_device =
      0;  // NCCL: the GPU of this rank (see worker/comm/devices.h)
};

// A collective in flight, like c10d's Work. From gloo (and for CPU tensors)
// the collective has already run when the Work is returned; from NCCL on a
// CUDA tensor it has been enqueued on the communicator's stream after the
// work the caller's current CUDA stream had enqueued (see
// nccl/nccl_communicator.h), and nothing has waited for it.
// Thread safety: one thread at a time.
class Work {
 public:
  virtual ~Work() = default;
  // Makes the calling thread's current CUDA stream wait for the collective
  // without blocking the CPU (what c10d's Work::wait does for NCCL): kernels
  // enqueued after this call see the result. No-op for CPU tensors.
  virtual void OrderCurrentStream() {}
  // Blocks the CPU until the collective has finished (OK), failed, or
  // passed its deadline (the communicator is then aborted); the error is
  // the communicator's, naming the operation, its sequence number and the
  // ranks that did not arrive.
  virtual absl::Status Wait() = 0;
  // Milliseconds the collective itself took; known after Wait() is OK.
  virtual double elapsed_ms() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual Backend backend() const = 0;
  // How the collectives travel, for logs ("nccl", "gloo over TCP, ...").
  virtual std::string transport() const { return BackendName(backend()); }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collectives entered so far (the last one's sequence number).
  int64_t sequence() const { return sequence_.load(); }

  // In place over a contiguous float32, float16 or bfloat16 tensor; 16-bit
  // tensors travel and are summed in 16 bits (each addition rounded from
  // float). kAverage divides by size() after the sum.
  virtual absl::Status AllReduce(at::Tensor& tensor, ReduceOp op) = 0;
  // AllReduce without waiting: the result is in `tensor` once the Work is
  // done (see Work). The Work keeps `tensor` alive. The default runs
  // AllReduce before returning (gloo's collectives are synchronous; the
  // reducer overlaps them on its own thread).
  virtual std::unique_ptr<Work> AllReduceAsync(at::Tensor tensor, ReduceOp op);
  virtual absl::Status Broadcast(at::Tensor& tensor, int root) = 0;
  virtual absl::Status Barrier() = 0;
  // Every rank's `mine`, in rank order (small objects: metrics, checksums).
  virtual absl::StatusOr<std::vector<std::string>> AllGather(
      const std::string& mine) = 0;

  // Ends the collective in flight, if any, and every later one at once:
  // they fail with ABORTED (no waiting for peers). Any thread; idempotent.
  void Abort();
  bool aborted() const { return aborted_; }

 protected:
  Communicator(int rank, int size, std::shared_ptr<Store> store,
               absl::Duration timeout)
      : rank_(rank), size_(size), store_(std::move(store)), timeout_(timeout) {}
  // The sequence number of the collective being entered (from 1).
  int64_t Enter() { return ++sequence_; }
  // The error of collective `seq` named `op`, which failed with `cause`
  // (the transport's status): ABORTED after Abort() (at once); else
  // DEADLINE_EXCEEDED when `cause` is, UNAVAILABLE otherwise, naming the
  // ranks that did not arrive (see the header comment).
  absl::Status CollectiveError(const std::string& op, int64_t seq,
                               const absl::Status& cause);
  // What Abort() does to the transport, on the caller's thread (any): make
  // the collective in flight fail soon and later ones fail at once.
  virtual void AbortTransport() = 0;

  const int rank_;
  const int size_;
  const std::shared_ptr<Store> store_;
  const absl::Duration timeout_;

 private:
  std::atomic<int64_t> sequence_{0};
  std::atomic<bool> aborted_{false};
};

}  // namespace gradsync
