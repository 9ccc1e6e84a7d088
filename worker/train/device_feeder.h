// Feeding the GPU: batches reach the compute device while the previous batch
// computes, and the step's loss is read without stopping the host.
//
// HostToDevice is what the trainer asks of a GPU: copies between pinned host
// memory and the device on a stream of their own (cuda_host_to_device.h),
// ordered with LibTorch's compute stream by events, never by blocking the
// host. Two copy slots alternate: batch k in one, k+1 in the other.
//
// DeviceFeeder hands the trainer its batches already on the device. When
// the trainer takes batch k, the copy of batch k+1 is queued before Next
// returns, so it runs on the copy engine while batch k computes (as PyTorch
// users get from pin_memory plus a CUDA-stream prefetcher). Batch k's
// tensors may be used on the compute stream at once: the compute stream,
// not the host, waits for their copy. A loader slot is given back (by the
// loader's next Next) only after the host has seen its copy finish, so the
// loader never overwrites memory a copy is still reading. Without a
// HostToDevice (the CPU) batches pass through untouched.
//
// Thread safety: a DeviceFeeder and its HostToDevice are used by one thread
// (the trainer's), like BatchLoader.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "loader/batch_loader.h"

namespace gradsync {

class HostToDevice {
 public:
  virtual ~HostToDevice() = default;

  // Queues the copy of `host`'s images and labels into new device tensors,
  // after the work queued on the compute stream so far, and returns the
  // batch that holds them (its other fields copied from `host`). `host`'s
  // memory must stay untouched until WaitCopied(slot); the device tensors
  // may be used only after OrderCompute(slot). slot is 0 or 1.
  virtual absl::StatusOr<Batch> CopyAsync(const Batch& host, int slot) = 0;
  // Makes the compute stream wait for slot's copy; the host does not wait.
  virtual absl::Status OrderCompute(int slot) = 0;
  // Blocks the host until slot's copy is done, at most `timeout`
  // (DEADLINE_EXCEEDED after).
  virtual absl::Status WaitCopied(int slot, absl::Duration timeout) = 0;

  // Queues the copy of one-element `value` to host memory after the work
  // queued on the compute stream so far; ReadScalar returns it, waiting at
  // most `timeout`. One read in flight at a time.
  virtual absl::Status ReadScalarAsync(const at::Tensor& value) = 0;
  virtual absl::StatusOr<double> ReadScalar(absl::Duration timeout) = 0;
};

class DeviceFeeder {
 public:
  // The host batches, as BatchLoader::Next gives them: true and the batch,
  // false at the end of the epoch, or an error.
  using Source = std::function<absl::StatusOr<bool>(Batch*)>;

  // `copies` null: batches pass through. Otherwise `copies` outlives the
  // feeder, and `timeout` bounds each wait for a copy.
  DeviceFeeder(HostToDevice* copies, absl::Duration timeout);
  ~DeviceFeeder();
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Starts reading `source` (an epoch); the epoch before must have been
  // read to its end or Drain()ed.
  void Start(Source source);
  // The next batch, on the device: true and `*batch`, or false at the end
  // of the epoch. `*batch.wait_ms` is the time this call blocked the host
  // (waiting for data or for a copy). Errors come from the source or the
  // copies; after one the feeder must be Drain()ed.
  absl::StatusOr<bool> Next(Batch* batch);
  // Waits until no copy reads host memory any more, then forgets the
  // queued batch: call before the loader starts another epoch or stops.
  absl::Status Drain();

 private:
  // Takes the source's next batch, if any, and queues its copy in `slot`
  // (it becomes next_).
  absl::Status Prefetch(int slot);

  HostToDevice* const copies_;
  const absl::Duration timeout_;
  Source source_;
  bool started_ = false;  // the first batch has been asked for
  bool queued_ = false;   // `next_` is on its way to the device
  int slot_ = 0;          // next_'s copy slot
  Batch next_;
};

}  // namespace gradsync
