#include "worker/model/builtin_model.h"

#include <utility>

namespace gradsync {
namespace {

std::vector<NamedTensor> Named(
    const torch::OrderedDict<std::string, torch::Tensor>& items) {
  std::vector<NamedTensor> out;
  out.reserve(items.size());
  for (const auto& item : items) out.push_back({item.key(), item.value()});
  return out;
}

}  // namespace

BuiltinModel::BuiltinModel(std::shared_ptr<ImageClassifier> module)
    : module_(std::move(module)) {}

absl::StatusOr<torch::Tensor> BuiltinModel::Forward(
    const torch::Tensor& batch) {
  return module_->forward(batch);
}

std::vector<NamedTensor> BuiltinModel::NamedParameters() {
  return Named(module_->named_parameters());
}

std::vector<NamedTensor> BuiltinModel::NamedBuffers() {
  return Named(module_->named_buffers());
}

void BuiltinModel::SetTraining(bool on) { module_->train(on); }

void BuiltinModel::To(const torch::Device& device) { module_->to(device); }

absl::StatusOr<std::unique_ptr<TrainableModel>> MakeBuiltinModel(
    const std::string& name, const ModelShape& shape) {
  auto module = MakeModel(name, shape);
  if (!module.ok()) return module.status();
  return std::unique_ptr<TrainableModel>(
      std::make_unique<BuiltinModel>(*std::move(module)));
}

}  // namespace gradsync
