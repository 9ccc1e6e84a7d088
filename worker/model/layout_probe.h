// ProbeChannelsLast: whether a model computes the same function with its
// 4-D weights in channels-last layout (memory_format.h) as contiguous, shown
// on a probe batch rather than assumed: a user's module may flatten with
// view(), which fails on a channels-last activation, or take a path that
// depends on strides.
//
// Runs forward and backward on `probe` in evaluation mode (no dropout, no
// running-statistics update) first as the model is, then re-laid out
// channels-last; keeps channels-last only when the second run works and its
// outputs and gradients match the first's (relative 1e-4, absolute 1e-5),
// else restores the contiguous layout. Gradients are cleared after, and
// the model is left in evaluation mode (callers set training).
// Thread safety: the training thread; not a collective (ranks agree on the
// answer themselves).
#pragma once

#include <torch/torch.h>

#include "worker/model/trainable_model.h"

namespace gradsync {

// True when `model` now lies channels-last.
bool ProbeChannelsLast(TrainableModel& model, const torch::Tensor& probe);

// A deterministic batch of `n` images shaped [channels, height, width],
// values in [0, 1] (the same on every rank, no random generator).
torch::Tensor ProbeBatch(int64_t n, int64_t channels, int64_t height,
                         int64_t width);

}  // namespace gradsync
