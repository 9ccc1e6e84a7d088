// Image classifiers by name, as LibTorch modules whose parameter names match
// the PyTorch definitions (no wrapper prefix), so a saved state_dict loads
// into the Python model:
//   fashion_cnn  the seeds' FashionCNN: conv32-bn-relu-pool,
//                conv64-bn-relu-pool, fc 2304->600, dropout 0.25, 600->120,
//                120->10 (28x28 inputs)
//   lenet        LeNet-5 (conv6-pool, conv16-pool, 120, 84, classes)
//   resnet18     ResNet-18 with a CIFAR-style stem (3x3 conv, no max-pool)
//   mlp          flatten, 256, ReLU, classes
// Modules are not thread-safe; one per rank.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

class ImageClassifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};

struct ModelShape {
  int channels = 1, height = 28, width = 28;
  int classes = 10;
};

// Python's F.dropout2d on any input (feature_dropout as is): on the
// fashion_cnn's (N, 600) activations it drops single activations, like the
// seeds' nn.Dropout2d in PyTorch 1.13, not whole samples as LibTorch's
// Dropout2d module does for 2-D input.
torch::Tensor PythonDropout2d(const torch::Tensor& x, double p, bool training);

// One of fashion_cnn's conv-bn-ReLU-max-pool Sequentials, run as conv, bn,
// max-pool, ReLU: relu(maxpool(x)) equals maxpool(relu(x)) in value and in
// gradient for every x (ReLU is monotonic, the pool picks the same element,
// and ReLU passes gradient only where that element is > 0), and ReLU then
// touches a quarter of the elements. Parameter names stay PyTorch's.
torch::Tensor ConvBnPoolRelu(torch::nn::SequentialImpl& layer, torch::Tensor x);

// INVALID_ARGUMENT for an unknown name or a shape the model cannot take
// (fashion_cnn needs 28x28).
absl::StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(
    const std::string& name, const ModelShape& shape);

}  // namespace gradsync
