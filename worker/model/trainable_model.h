// TrainableModel: what one rank trains, a built-in LibTorch module
// (builtin_model.h) or a TorchScript module a user wrote (script_model.h).
// The trainer, the reducer's broadcast, checkpoints, the channels-last
// layout and evaluation hold only this; none of them asks which kind it is.
//
// Contract:
//   - Forward: the batch as the data set gives it in, one [N, outputs]
//     Tensor out; anything else is INVALID_ARGUMENT naming what was found.
//   - NamedParameters: every parameter (frozen ones too) under the name a
//     PyTorch state_dict gives it, in registration order. NamedBuffers:
//     every buffer, each marked whether a state_dict holds it. The tensors
//     are the module's own: in-place changes and set_data reach it.
//   - HasLoss/Loss: a loss(output, target) the module defines, if any.
// Thread safety: none; one per rank, used by the training thread.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

struct NamedTensor {
  std::string name;
  torch::Tensor value;
  bool in_state_dict = true;  // false: a non-persistent buffer
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;

  virtual absl::StatusOr<torch::Tensor> Forward(const torch::Tensor& batch) = 0;
  virtual std::vector<NamedTensor> NamedParameters() = 0;
  virtual std::vector<NamedTensor> NamedBuffers() = 0;
  // PyTorch's module.train(on) / module.eval().
  virtual void SetTraining(bool on) = 0;
  // Moves parameters and buffers, keeping their identity (as module.to).
  virtual void To(const torch::Device& device) = 0;
  // Whether the trainer may lay 4-D weights out channels-last on the CPU
  // (memory_format.h) without asking: true where the module is known to
  // compute the same function in both layouts; otherwise the trainer
  // probes it (layout_probe.h).
  virtual bool ChannelsLastSafe() const = 0;

  // Writes the module, as it is now, as TorchScript (torch.jit.load reads
  // it) to `path`: UNIMPLEMENTED for a module that is not TorchScript.
  virtual absl::Status ExportTorchScript(const std::string& path);

  virtual bool HasLoss() const { return false; }
  // The module's own loss, a scalar Tensor; UNIMPLEMENTED unless HasLoss().
  virtual absl::StatusOr<torch::Tensor> Loss(const torch::Tensor& output,
                                             const torch::Tensor& target);
};

// The parameters an optimizer and the reducer take: those that require a
// gradient, in NamedParameters order.
std::vector<torch::Tensor> TrainableParameters(TrainableModel& model);

// Every parameter and buffer a state_dict holds, in state_dict order
// (parameters, then persistent buffers; PyTorch interleaves them by
// submodule, which a dict keyed by name does not see).
std::vector<NamedTensor> StateTensors(TrainableModel& model);

}  // namespace gradsync
