// Evaluate: exact evaluation at an epoch's end. Each rank runs the model
// over its part of the eval split (the coordinator's eval shards cover
// every sample exactly once, no padding), then one all-reduce sums correct
// predictions, loss and counts over the ranks, so every rank gets the same
// EvalReport. The forward pass runs under `precision`'s autocast, as in
// training, and the loss is training's (loss.h); accuracy counts only
// where targets are class indices (-1 otherwise). Each batch's forward and
// loss is watched by `deadline` (step_deadline.h).
// Thread safety: the training thread; a collective.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "loader/batch_loader.h"
#include "worker/comm/communicator.h"
#include "worker/model/trainable_model.h"
#include "worker/train/step_deadline.h"
#include "worker/train/train_spec.h"

namespace gradsync {

absl::StatusOr<EvalReport> Evaluate(
    TrainableModel& model, const torch::Device& device, Precision precision,
    LossKind loss, BatchLoader& loader, const std::vector<int64_t>& indices,
    int epoch, Communicator& comm, StepDeadline& deadline);

}  // namespace gradsync
