// Loss: the objective a step minimises and evaluation reports, by PyTorch's
// functional names (`--loss`):
//   cross_entropy    F.cross_entropy(output, target) (the default); class
//                    indices, or class probabilities shaped like output
//   nll              F.nll_loss: output holds log-probabilities; class
//                    indices only
//   mse              F.mse_loss; bce_with_logits:
//                    F.binary_cross_entropy_with_logits. Float targets
//                    shaped like output are taken as they are; class indices
//                    become one-hot rows of output's width (as Keras'
//                    categorical targets)
// A model that defines loss(output, target) (a scripted module's method)
// uses it instead, whatever --loss says. Every loss is the batch's mean.
// A target that does not fit (a class index out of range, a shape that
// matches neither form) is INVALID_ARGUMENT naming both shapes.
// Thread safety: pure functions; the model's loss runs on the caller's
// thread.
#pragma once

#include <torch/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "worker/model/trainable_model.h"
#include "worker/train/train_spec.h"

namespace gradsync {

// INVALID_ARGUMENT naming the accepted values for anything else.
absl::StatusOr<LossKind> ParseLoss(const std::string& name);
const char* LossName(LossKind kind);

absl::StatusOr<torch::Tensor> ComputeLoss(LossKind kind, TrainableModel& model,
                                          const torch::Tensor& output,
                                          const torch::Tensor& target);

// Whether `target` holds class indices (1-D integers), so that accuracy
// means something.
bool IsClassTarget(const torch::Tensor& target);

}  // namespace gradsync
