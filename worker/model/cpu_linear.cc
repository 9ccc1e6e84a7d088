#include "worker/model/cpu_linear.h"

#include <cstdlib>
#include <cstring>

namespace gradsync {

bool CpuLinearUsesOneDnn() {
  static const bool use = [] {
    const char* env = std::getenv("GRADSYNC_CPU_LINEAR");
    return at::hasMKLDNN() &&
           !(env != nullptr && std::strcmp(env, "aten") == 0);
  }();
  return use;
}

torch::Tensor LinearForward(torch::nn::Linear& fc, const torch::Tensor& x) {
  if (x.dim() != 2 || x.size(0) == 0 || !x.device().is_cpu() ||
      x.scalar_type() != torch::kFloat32 || !CpuLinearUsesOneDnn()) {
    return fc->forward(x);
  }
  const int64_t n = x.size(0), in = x.size(1), out = fc->weight.size(0);
  return torch::conv2d(x.reshape({n, in, 1, 1}),
                       fc->weight.view({out, in, 1, 1}), fc->bias)
      .reshape({n, out});
}

}  // namespace gradsync
