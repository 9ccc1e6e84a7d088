// predict_dump MODEL[:CLASSES] CHECKPOINT IMAGE...: loads a gradsync
// checkpoint's "model" state dict (worker/model/checkpoint.h) into the C++
// model (CLASSES classes, default 10) and prints, per image, the predicted
// class and the logits. tests/integration/e2e_train.py and models_e2e.py
// compare them with the same weights loaded in Python PyTorch.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "loader/image_decoder.h"
#include "loader/transforms.h"
#include "worker/model/models.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: predict_dump MODEL[:CLASSES] CHECKPOINT IMAGE...\n");
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  c10::Dict<c10::IValue, c10::IValue> state =
      torch::pickle_load(bytes).toGenericDict().at("model").toGenericDict();
  auto first = gradsync::DecodeImageFile(argv[3], 0);
  if (!first.ok()) {
    std::fprintf(stderr, "%s\n", first.status().ToString().c_str());
    return 1;
  }
  gradsync::ModelShape shape;
  shape.channels = first->channels();
  shape.height = first->rows();
  shape.width = first->cols();
  std::string name = argv[1];
  if (const size_t colon = name.find(':'); colon != std::string::npos) {
    shape.classes = std::atoi(name.c_str() + colon + 1);
    name.resize(colon);
  }
  auto model = gradsync::MakeModel(name, shape);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  torch::NoGradGuard no_grad;
  for (auto& p : (*model)->named_parameters()) {
    p.value().copy_(state.at(p.key()).toTensor());
  }
  for (auto& b : (*model)->named_buffers()) {
    b.value().copy_(state.at(b.key()).toTensor());
  }
  (*model)->eval();
  for (int i = 3; i < argc; ++i) {
    auto image = gradsync::DecodeImageFile(argv[i], shape.channels);
    if (!image.ok()) return 1;
    at::Tensor x = torch::empty({1, shape.channels, shape.height, shape.width});
    gradsync::ToTensorInto(*image, {}, {}, x.data_ptr<float>());
    at::Tensor logits = (*model)->forward(x)[0];
    std::printf("%ld", static_cast<long>(logits.argmax().item<int64_t>()));
    for (int64_t k = 0; k < logits.size(0); ++k) {
      std::printf(" %.6f", logits[k].item<float>());
    }
    std::printf("\n");
  }
  return 0;
}
