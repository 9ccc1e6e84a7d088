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
  Batch host;  // views a loader slot until the source's next call
  if (!started_) {
    started_ = true;
    auto got = source_(&host);
    if (!got.ok()) return got.status();
    if (*got) {
      auto copied = copies_->CopyAsync(host, slot_);
      if (!copied.ok()) return copied.status();
      next_ = std::move(*copied);
      queued_ = true;
    }
  }
  if (!queued_) return false;
  // The source's next call hands next_'s loader slot back for refilling, so
  // its copy must be done first. It was queued a step ago and has long
  // finished when the GPU keeps up; this wait is what the host pays if not.
  if (absl::Status s = copies_->WaitCopied(slot_, timeout_); !s.ok()) return s;
  const int ready = slot_;
  Batch out = std::move(next_);
  queued_ = false;
  auto got = source_(&host);
  if (!got.ok()) return got.status();
  if (*got) {
    // Batch k+1 goes to the device while batch k computes.
    slot_ = 1 - slot_;
    auto copied = copies_->CopyAsync(host, slot_);
    if (!copied.ok()) return copied.status();
    next_ = std::move(*copied);
    queued_ = true;
  }
  if (absl::Status s = copies_->OrderCompute(ready); !s.ok()) return s;
  out.wait_ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - begin)
                    .count();
  *batch = std::move(out);
  return true;
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
