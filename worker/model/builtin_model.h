// BuiltinModel: one of gradsync's own LibTorch models (models.h) as a
// TrainableModel. Its forward is the module's; every buffer is in its
// state_dict (LibTorch modules have no non-persistent ones); channels-last
// is safe (the models flatten with reshape; memory_format_test).
// Thread safety: none; one per rank.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/model/models.h"
#include "worker/model/trainable_model.h"

namespace gradsync {

class BuiltinModel : public TrainableModel {
 public:
  explicit BuiltinModel(std::shared_ptr<ImageClassifier> module);

  absl::StatusOr<torch::Tensor> Forward(const torch::Tensor& batch) override;
  std::vector<NamedTensor> NamedParameters() override;
  std::vector<NamedTensor> NamedBuffers() override;
  void SetTraining(bool on) override;
  void To(const torch::Device& device) override;
  bool ChannelsLastSafe() const override { return true; }

  ImageClassifier& module() { return *module_; }

 private:
  std::shared_ptr<ImageClassifier> module_;
};

// MakeModel(name, shape) wrapped; its errors as MakeModel's.
absl::StatusOr<std::unique_ptr<TrainableModel>> MakeBuiltinModel(
    const std::string& name, const ModelShape& shape);

}  // namespace gradsync
