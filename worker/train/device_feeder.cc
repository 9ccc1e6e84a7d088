#include "worker/train/device_feeder.h"

#include <chrono>
#include <utility>

namespace gradsync {

DeviceFeeder::DeviceFeeder(HostToDevice* copies, absl::Duration timeout)
    : copies_(copies), timeout_(timeout) {}

DeviceFeeder::~DeviceFeeder() { Drain().IgnoreError(); }

void DeviceFeeder::Start(Source source) {
  source_ = std::move(source);
  started_ = false;
  queued_ = false;
}

absl::StatusOr<bool> DeviceFeeder::Next(Batch* batch) {
  if (copies_ == nullptr) return source_(batch);
  const auto begin = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    if (absl::Status s = Prefetch(slot_); !s.ok()) return s;
  }
  if (!queued_) return false;
  // The source's next call hands next_'s loader slot back for refilling, so
  // its copy must be done first. It was queued a step ago and has long
  // finished when the GPU keeps up; this wait is what the host pays if not.
  if (absl::Status s = copies_->WaitCopied(slot_, timeout_); !s.ok()) return s;
  const int ready = slot_;
  Batch out = std::move(next_);
  queued_ = false;
  // Batch k+1 goes to the device while batch k computes.
  if (absl::Status s = Prefetch(1 - ready); !s.ok()) return s;
  if (absl::Status s = copies_->OrderCompute(ready); !s.ok()) return s;
  out.wait_ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - begin)
                    .count();
  *batch = std::move(out);
  return true;
}

absl::Status DeviceFeeder::Prefetch(int slot) {
  Batch host;  // views a loader slot until the source's next call
  auto got = source_(&host);
  if (!got.ok()) return got.status();
  if (!*got) return absl::OkStatus();
  auto copied = copies_->CopyAsync(host, slot);
  if (!copied.ok()) return copied.status();
  next_ = std::move(*copied);
  slot_ = slot;
  queued_ = true;
  return absl::OkStatus();
}

absl::Status DeviceFeeder::Drain() {
  absl::Status status;
  if (copies_ != nullptr && queued_) {
    status = copies_->WaitCopied(slot_, timeout_);
  }
  queued_ = false;
  started_ = false;
  next_ = Batch();
  return status;
}

}  // namespace gradsync
