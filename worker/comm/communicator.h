// Communicator: collectives among the ranks of one job attempt, behind one
// interface (like c10d's Backend), picked at run time: "gloo" (libgloo TCP
// transport) for CPU tensors, "nccl" for CUDA tensors. Bootstrap goes
// through a Store (gloo's rendezvous; NCCL's unique id published by rank 0).
//
// Every collective has a deadline (CommOptions::timeout). On expiry it
// fails with DEADLINE_EXCEEDED naming the operation, its sequence number and
// the ranks that did not arrive: each timed-out rank marks its arrival in
// the store, waits a short grace for the other live ranks' marks, and names
// the ranks whose mark is missing.
//
// Thread safety: one thread issues the collectives of a communicator (as
// with gloo and NCCL communicators themselves); rank(), size(), sequence()
// may be read from any thread.
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
#include "worker/comm/store.h"

namespace gradsync {

enum class ReduceOp { kSum, kAverage };

struct CommOptions {
  int rank = 0;
  int size = 1;
  std::shared_ptr<Store> store;  // shared by all ranks of the group
  absl::Duration timeout = absl::Seconds(60);  // per collective
  std::string hostname = "127.0.0.1";  // address peers reach this rank at
  // gloo all-reduce: buffers up to this size go to every peer in one
  // message; larger ones run the ring in segments of this size. A positive
  // multiple of 4 (see gloo_allreduce.h; bench/README.md for the choice).
  size_t gloo_segment_bytes = 512 << 10;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string backend() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collectives entered so far (the last one's sequence number).
  int64_t sequence() const { return sequence_.load(); }

  // In place over a contiguous float32, float16 or bfloat16 tensor; 16-bit
  // tensors travel and are summed in 16 bits (each addition rounded from
  // float). kAverage divides by size() after the sum.
  virtual absl::Status AllReduce(at::Tensor& tensor, ReduceOp op) = 0;
  virtual absl::Status Broadcast(at::Tensor& tensor, int root) = 0;
  virtual absl::Status Barrier() = 0;
  // Every rank's `mine`, in rank order (small objects: metrics, checksums).
  virtual absl::StatusOr<std::vector<std::string>> AllGather(
      const std::string& mine) = 0;

 protected:
  Communicator(int rank, int size, std::shared_ptr<Store> store,
               absl::Duration timeout)
      : rank_(rank), size_(size), store_(std::move(store)), timeout_(timeout) {}
  // Next sequence number for a collective named `op`.
  int64_t Enter() { return ++sequence_; }
  // Builds the DEADLINE_EXCEEDED error of collective `seq`, naming the ranks
  // that did not arrive (see the header comment). `cause` is the
  // transport's message.
  absl::Status TimeoutError(const std::string& op, int64_t seq,
                            const std::string& cause);

  const int rank_;
  const int size_;
  const std::shared_ptr<Store> store_;
  const absl::Duration timeout_;

 private:
  std::atomic<int64_t> sequence_{0};
};

// Connects a gloo communicator (full mesh over TCP). All ranks call it with
// the same store and size; it returns once every rank is connected or fails
// at the timeout naming the ranks that never published their address. Sets
// SIGPIPE to ignored if it is at its default (a peer that went away is an
// error of the collective, not the end of the process).
absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const CommOptions& options);

// NCCL over CUDA tensors; UNIMPLEMENTED when built without NCCL,
// FAILED_PRECONDITION when this process sees no GPU.
absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const CommOptions& options, int device);

}  // namespace gradsync
