// GradScaler: dynamic loss scaling for "16-mixed" training, with the
// semantics of torch.amp.GradScaler. The loss is multiplied by the scale
// before backward; once the gradients are final (all-reduced), they are
// divided by it and checked for inf/NaN. If any rank found one, every rank
// skips the optimizer step (the decision is all-reduced, so replicas never
// diverge) and the scale backs off (x0.5); after growth_interval clean
// steps in a row it grows (x2).
//
// Thread safety: none; the training thread owns it.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"
#include "worker/model/checkpoint.h"

namespace gradsync {

class GradScaler {
 public:
  // Starts from `state` (torch.amp.GradScaler's defaults, or a
  // checkpoint's).
  explicit GradScaler(ScalerState state = {}) : state_(state) {}

  // loss * scale.
  torch::Tensor Scale(const torch::Tensor& loss) const;
  // Divides every defined gradient of `params` by the scale, then agrees
  // with every rank of `comm` whether any rank saw an inf or NaN (true:
  // skip this step). Errors are the communicator's.
  absl::StatusOr<bool> UnscaleAndCheck(const std::vector<torch::Tensor>& params,
                                       Communicator& comm);
  // After the step (taken or skipped): back off or grow the scale.
  void Update(bool found_inf);

  double scale() const { return state_.scale; }
  const ScalerState& state() const { return state_; }

 private:
  ScalerState state_;
};

}  // namespace gradsync
