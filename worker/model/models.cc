#include "worker/model/models.h"

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

namespace nn = torch::nn;

class FashionCnn : public ImageClassifier {
 public:
  explicit FashionCnn(const ModelShape& s) {
    layer1 = register_module(
        "layer1",
        nn::Sequential(
            nn::Conv2d(nn::Conv2dOptions(s.channels, 32, 3).padding(1)),
            nn::BatchNorm2d(32), nn::ReLU(),
            nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2))));
    layer2 = register_module(
        "layer2", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(32, 64, 3)),
                                 nn::BatchNorm2d(64), nn::ReLU(),
                                 nn::MaxPool2d(nn::MaxPool2dOptions(2))));
    fc1 = register_module("fc1", nn::Linear(64 * 6 * 6, 600));
    fc2 = register_module("fc2", nn::Linear(600, 120));
    fc3 = register_module("fc3", nn::Linear(120, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = ConvBnPoolRelu(*layer2, ConvBnPoolRelu(*layer1, x));
    x = x.reshape({x.size(0), -1});  // copies a channels-last x
    // The seeds apply nn.Dropout2d(0.25) to the (N, 600) activations.
    x = PythonDropout2d(fc1->forward(x), 0.25, is_training());
    return fc3->forward(fc2->forward(x));
  }

 private:
  nn::Sequential layer1{nullptr}, layer2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

}  // namespace

torch::Tensor ConvBnPoolRelu(nn::SequentialImpl& layer, torch::Tensor x) {
  x = layer[1]->as<nn::BatchNorm2d>()->forward(
      layer[0]->as<nn::Conv2d>()->forward(x));
  return torch::relu(layer[3]->as<nn::MaxPool2d>()->forward(x));
}

torch::Tensor PythonDropout2d(const torch::Tensor& x, double p, bool training) {
  // Python calls feature_dropout on the tensor as it is; LibTorch's
  // Dropout2d would first unsqueeze a 2-D input into one (1, N, C) sample
  // and so drop whole rows (samples) instead of single activations.
  return torch::feature_dropout(x, p, training);
}

namespace {

class LeNet : public ImageClassifier {
 public:
  explicit LeNet(const ModelShape& s) {
    conv1 = register_module(
        "conv1", nn::Conv2d(nn::Conv2dOptions(s.channels, 6, 5).padding(2)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(6, 16, 5)));
    const int h = ((s.height / 2) - 4) / 2, w = ((s.width / 2) - 4) / 2;
    fc1 = register_module("fc1", nn::Linear(16 * h * w, 120));
    fc2 = register_module("fc2", nn::Linear(120, 84));
    fc3 = register_module("fc3", nn::Linear(84, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    // Pooling before ReLU: see ConvBnPoolRelu.
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2->forward(x), 2));
    x = x.flatten(1);
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }

 private:
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

class Mlp : public ImageClassifier {
 public:
  explicit Mlp(const ModelShape& s) {
    fc1 = register_module("fc1",
                          nn::Linear(s.channels * s.height * s.width, 256));
    fc2 = register_module("fc2", nn::Linear(256, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    return fc2->forward(torch::relu(fc1->forward(x.flatten(1))));
  }

 private:
  nn::Linear fc1{nullptr}, fc2{nullptr};
};

// torchvision's BasicBlock.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(int in, int out, int stride) {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3)
                                                    .stride(stride)
                                                    .padding(1)
                                                    .bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(out));
    conv2 = register_module(
        "conv2",
        nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
    bn2 = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      downsample = register_module(
          "downsample",
          nn::Sequential(
              nn::Conv2d(
                  nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)),
              nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    return torch::relu(out + (downsample ? downsample->forward(x) : x));
  }

 private:
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

class ResNet18 : public ImageClassifier {
 public:
  explicit ResNet18(const ModelShape& s) {
    conv1 = register_module(
        "conv1",
        nn::Conv2d(
            nn::Conv2dOptions(s.channels, 64, 3).padding(1).bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(64));
    int in = 64;
    const int widths[4] = {64, 128, 256, 512};
    for (int i = 0; i < 4; ++i) {
      nn::Sequential layer;
      layer->push_back(BasicBlock(in, widths[i], i == 0 ? 1 : 2));
      layer->push_back(BasicBlock(widths[i], widths[i], 1));
      layers.push_back(register_module(absl::StrCat("layer", i + 1), layer));
      in = widths[i];
    }
    fc = register_module("fc", nn::Linear(512, s.classes));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn1->forward(conv1->forward(x)));
    for (auto& layer : layers) x = layer->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc->forward(x);
  }

 private:
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  std::vector<nn::Sequential> layers;
  nn::Linear fc{nullptr};
};

}  // namespace

absl::StatusOr<std::shared_ptr<ImageClassifier>> MakeModel(
    const std::string& name, const ModelShape& s) {
  if (s.channels < 1 || s.height < 1 || s.width < 1 || s.classes < 1) {
    return absl::InvalidArgumentError("model: bad input shape");
  }
  if (name == "fashion_cnn") {
    if (s.height != 28 || s.width != 28) {
      return absl::InvalidArgumentError(
          absl::StrCat("model fashion_cnn takes 28x28 images (got ", s.height,
                       "x", s.width, ")"));
    }
    return std::shared_ptr<ImageClassifier>(std::make_shared<FashionCnn>(s));
  }
  if (name == "lenet") {
    if (s.height < 12 || s.width < 12) {
      return absl::InvalidArgumentError("model lenet needs images >= 12x12");
    }
    return std::shared_ptr<ImageClassifier>(std::make_shared<LeNet>(s));
  }
  if (name == "resnet18") {
    return std::shared_ptr<ImageClassifier>(std::make_shared<ResNet18>(s));
  }
  if (name == "mlp") {
    return std::shared_ptr<ImageClassifier>(std::make_shared<Mlp>(s));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown model '", name, "'"));
}

}  // namespace gradsync
