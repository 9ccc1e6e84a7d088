#include "worker/model/trainable_model.h"

namespace gradsync {

absl::StatusOr<torch::Tensor> TrainableModel::Loss(const torch::Tensor&,
                                                   const torch::Tensor&) {
  return absl::UnimplementedError("the model defines no loss");
}

absl::Status TrainableModel::ExportTorchScript(const std::string&) {
  return absl::UnimplementedError(
      "only a model file (TorchScript) can be exported as TorchScript");
}

std::vector<torch::Tensor> TrainableParameters(TrainableModel& model) {
  std::vector<torch::Tensor> out;
  for (NamedTensor& p : model.NamedParameters()) {
    if (p.value.requires_grad()) out.push_back(p.value);
  }
  return out;
}

std::vector<NamedTensor> StateTensors(TrainableModel& model) {
  std::vector<NamedTensor> out = model.NamedParameters();
  for (NamedTensor& b : model.NamedBuffers()) {
    if (b.in_state_dict) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace gradsync
