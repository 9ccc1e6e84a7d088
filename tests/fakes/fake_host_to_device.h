// FakeHostToDevice: device_feeder.h's HostToDevice on the CPU, as strict as
// a real copy stream is unforgiving. A batch copy is queued, not done: the
// "device" tensors hold NaN images and -1 labels (which make cross_entropy
// fail) until OrderCompute or WaitCopied completes the copy, and the copy
// reads the host tensors only then, so a caller that lets the host memory
// be refilled before waiting copies the wrong batch. Misuse the real GPU
// would punish silently (a slot reused before its copy was waited for, a
// second scalar read queued before the first was read) is recorded in
// violations(). Thread safety: one thread.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/train/device_feeder.h"

namespace gradsync {

class FakeHostToDevice : public HostToDevice {
 public:
  absl::StatusOr<Batch> CopyAsync(const Batch& host, int slot) override {
    ++copies_;
    Copy& c = slots_.at(slot);
    if (!c.done) {
      violations_.push_back(absl::StrCat("slot ", slot, " reused by batch ",
                                         host.index, " before it was waited"));
    }
    Batch out = host;
    out.images =
        at::full_like(host.images, std::numeric_limits<float>::quiet_NaN());
    out.labels = at::full_like(host.labels, -1);
    c = Copy{host.images, host.labels, out.images, out.labels, false};
    return out;
  }

  absl::Status OrderCompute(int slot) override {
    Complete(slot);
    return absl::OkStatus();
  }

  absl::Status WaitCopied(int slot, absl::Duration) override {
    ++waits_;
    if (!fail_wait_.ok()) return fail_wait_;
    Complete(slot);
    return absl::OkStatus();
  }

  absl::Status ReadScalarAsync(const at::Tensor& value) override {
    if (scalar_.defined()) violations_.push_back("a second scalar read queued");
    scalar_ = value.detach();
    return absl::OkStatus();
  }

  absl::StatusOr<double> ReadScalar(absl::Duration) override {
    if (!scalar_.defined()) return absl::InternalError("no scalar queued");
    const double v = scalar_.item<double>();
    scalar_ = at::Tensor();
    ++reads_;
    return v;
  }

  void FailWaits(absl::Status s) { fail_wait_ = std::move(s); }
  int copies() const { return copies_; }
  int waits() const { return waits_; }
  int reads() const { return reads_; }
  bool all_done() const { return slots_[0].done && slots_[1].done; }
  const std::vector<std::string>& violations() const { return violations_; }

 private:
  struct Copy {
    at::Tensor from_images, from_labels, to_images, to_labels;
    bool done = true;
  };

  void Complete(int slot) {
    Copy& c = slots_.at(slot);
    if (c.done) return;
    c.to_images.copy_(c.from_images);
    c.to_labels.copy_(c.from_labels);
    c.done = true;
  }

  std::array<Copy, 2> slots_;
  at::Tensor scalar_;
  absl::Status fail_wait_;
  int copies_ = 0, waits_ = 0, reads_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace gradsync
