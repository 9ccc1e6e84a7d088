// Reducer: DDP-style gradient averaging. Parameters are grouped into buckets
// in reverse registration order (the order backward produces gradients):
// the first bucket holds about first_bucket_cap_bytes, the others about
// bucket_cap_bytes. Buckets live on the parameters' device. An autograd
// post-hook on each parameter copies its gradient into its bucket; when a
// bucket is complete (and every earlier bucket has been launched, so all
// ranks launch in the same order) its all-reduce starts while backward
// goes on. Finalize() waits for the rest and writes the averaged gradients
// back.
//
// CPU parameters (gloo): the all-reduces run one after another on the
// reducer's communication thread.
// CUDA parameters (NCCL), as c10d's reducer: the hook copies the gradient
// on the current (compute) stream and launches the bucket's
// Communicator::AllReduceAsync from the hook, which orders the NCCL stream
// after that copy with an event and returns at once, so backward never
// waits for a bucket. Finalize() makes the compute stream (not the CPU)
// wait for each bucket and enqueues the copies back into .grad on it; then
// it blocks the CPU once, on the previous step's all-reduces, polling them
// against the deadline (how a dead peer or an NCCL error surfaces, one step
// late). So the CPU runs at most one step ahead of the GPU, as under DDP,
// whose reducer never blocks it. Drain() waits for the last step's.
//
// Use per step: PrepareForBackward(); loss.backward(); Finalize(). With
// set_require_sync(false) (gradient accumulation) hooks do nothing and
// gradients accumulate locally, as DDP's no_sync().
//
// Thread safety: one training thread; hooks may run on autograd threads.
#pragma once

#include <torch/torch.h>

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "worker/comm/communicator.h"

namespace gradsync {

// The bucket size when a job names none: DDP's 25 MiB for NCCL; 4 MiB for
// gloo, where an all-reduce of 4 MiB already runs near its peak bandwidth
// and a large gradient that is ready early in backward (fashion_cnn's fc1,
// 5.5 MB) goes at once instead of waiting in one bucket with the
// convolutions' gradients, ready only at the end: fashion_cnn's exposed
// all-reduce fell from 15 to 3.7 ms a step (bench/README.md).
int64_t DefaultBucketCapBytes(Backend backend);

struct ReducerOptions {
  int64_t bucket_cap_bytes = 25 << 20;
  int64_t first_bucket_cap_bytes = 1 << 20;
  // kFloat32 = no compression; kHalf / kBFloat16: each bucket is divided by
  // the world size, cast, summed in 16 bits on the wire and cast back (DDP's
  // fp16/bf16 compress hooks).
  torch::ScalarType wire_dtype = torch::kFloat32;
};

class Reducer {
 public:
  // `params`: the model's float32 parameters in registration order, all on
  // the CPU or all on one GPU (then `comm` must be NCCL on that GPU); `comm`
  // must outlive the reducer.
  static absl::StatusOr<std::unique_ptr<Reducer>> Create(
      std::vector<torch::Tensor> params, Communicator* comm,
      ReducerOptions options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Copies rank 0's values of `tensors` (a model's parameters and
  // buffers, listed in the same order on every rank) to every rank.
  static absl::Status BroadcastTensors(
      const std::vector<torch::Tensor>& tensors, Communicator& comm);

  void set_require_sync(bool sync) { require_sync_ = sync; }
  void PrepareForBackward();
  // Waits for every bucket's all-reduce and writes the averaged gradients
  // into the parameters' .grad. The first collective error is returned
  // (CUDA: of the previous step's all-reduces; this step's stay in flight).
  absl::Status Finalize();
  // CUDA: waits for the all-reduces Finalize() left in flight and returns
  // their first error; call before reading the gradients on the CPU, at
  // the end of an epoch, before a checkpoint. CPU: returns OK at once.
  absl::Status Drain();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  // Parameter indices (registration order) of bucket b.
  std::vector<int> bucket_params(int b) const;
  // Of the last synchronised step: time Finalize() waited (exposed) and the
  // communication thread's all-reduce time (overlapped = total - exposed);
  // CUDA: the all-reduce time is the previous step's, known once waited.
  double exposed_ms() const { return exposed_ms_; }
  // Buckets of the last step whose all-reduce was launched by an autograd
  // hook, i.e. while backward was still running (the rest by Finalize()).
  int launched_during_backward() const;
  double allreduce_ms() const { return allreduce_ms_; }

 private:
  // The layout (params, offsets, flat) is fixed at Create; the step's
  // state (pending, launched, done) is guarded by mu_.
  struct Bucket {
    std::vector<int> params;
    std::vector<int64_t> offsets;
    torch::Tensor flat;
    torch::Tensor wire;          // CUDA with compression: what NCCL sums
    std::unique_ptr<Work> work;  // CUDA: this step's all-reduce
    int pending = 0;
    bool launched = false;
    bool done = false;
  };
  Reducer(std::vector<torch::Tensor> params, Communicator* comm,
          torch::ScalarType wire_dtype);
  void OnGradReady(int param);
  // Copies the parameter's gradient (or zeros) into its bucket and launches
  // buckets that became complete. No-op for a parameter already marked.
  void MarkReadyLocked(int param, bool has_grad)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LaunchReadyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CUDA: enqueues bucket b's all-reduce (after its wire cast) on the
  // communicator's stream.
  void LaunchOnDeviceLocked(Bucket& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CommLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // The second half of Finalize() for each kind of parameter.
  absl::Status FinishOnCpuLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FinishOnDeviceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes every bucket's averaged gradients into the parameters' .grad.
  void CopyBack();
  // CUDA: waits for in_flight_, empties it, sets allreduce_ms_.
  absl::Status WaitInFlight() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::vector<torch::Tensor> params_;
  Communicator* comm_;
  const torch::ScalarType wire_dtype_;
  bool on_device_ = false;  // CUDA parameters (fixed at Create)
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;      // param -> bucket
  std::vector<int64_t> offset_of_;  // param -> offset in its bucket
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  bool require_sync_ = true;  // training thread only
  // Of the last Finalize(); training thread only.
  double exposed_ms_ = 0, allreduce_ms_ = 0;

  mutable absl::Mutex mu_;
  // CUDA: the last synchronised step's all-reduces, not yet waited for.
  std::vector<std::unique_ptr<Work>> in_flight_ ABSL_GUARDED_BY(mu_);
  std::vector<char> ready_ ABSL_GUARDED_BY(mu_);  // grad copied this step
  std::deque<int> queue_ ABSL_GUARDED_BY(mu_);    // to all-reduce, in order
  int next_launch_ ABSL_GUARDED_BY(mu_) = 0;
  int completed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  double comm_ms_ ABSL_GUARDED_BY(mu_) = 0;
  bool finalizing_ ABSL_GUARDED_BY(mu_) = false;
  int launched_during_backward_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread comm_thread_;
};

}  // namespace gradsync
