// Channels-last (NHWC) layout for a model's convolution weights.
//
// With its 4-D parameters in channels-last layout, a model's convolutions
// (oneDNN) produce channels-last activations, and ATen's batch norm, ReLU and
// max pooling then run their vectorised NHWC kernels: on this project's
// 2-core CPU machine a fashion_cnn forward pass took 25 ms instead of 48 ms
// (bench/README.md). It is what Intel's extension for PyTorch does by
// default on CPU. Values and gradients are the same function up to float
// order; parameter names and shapes do not change. Models must flatten with
// reshape (not view), which copies a channels-last tensor into the
// logical order.
//
// Not thread-safe: call before the model is used, and before an optimizer
// or reducer takes the parameters (their tensors keep their identity; only
// the storage changes).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "worker/model/trainable_model.h"

namespace gradsync {

// Re-lays out every 4-D tensor of `tensors` in channels-last order,
// including those with a size-1 dimension that would already count as
// channels-last contiguous (a 1-channel convolution's weight).
void UseChannelsLast(const std::vector<torch::Tensor>& tensors);
// The same for every parameter and buffer of `model`.
void UseChannelsLast(TrainableModel& model);
// Undoes it: every 4-D parameter and buffer back in contiguous layout.
void UseContiguous(TrainableModel& model);

// True when `t` is 4-D and laid out (and marked) channels-last.
bool IsChannelsLast(const torch::Tensor& t);

}  // namespace gradsync
