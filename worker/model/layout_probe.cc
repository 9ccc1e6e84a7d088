#include "worker/model/layout_probe.h"

#include <vector>

#include "worker/model/memory_format.h"

namespace gradsync {
namespace {

struct ProbeRun {
  bool ok = false;
  torch::Tensor output;
  std::vector<torch::Tensor> grads;
};

ProbeRun Run(TrainableModel& model, const torch::Tensor& batch,
             const std::vector<torch::Tensor>& params) {
  ProbeRun run;
  for (torch::Tensor p : params) p.mutable_grad() = torch::Tensor();
  try {
    absl::StatusOr<torch::Tensor> out = model.Forward(batch);
    if (!out.ok()) return run;
    out->to(torch::kFloat).square().sum().backward();
    run.output = out->detach().contiguous();
    for (const torch::Tensor& p : params) {
      run.grads.push_back(p.grad().defined() ? p.grad().contiguous()
                                             : torch::Tensor());
    }
    run.ok = true;
  } catch (const std::exception&) {
    run.ok = false;
  }
  for (torch::Tensor p : params) p.mutable_grad() = torch::Tensor();
  return run;
}

bool Close(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || torch::allclose(a, b, 1e-4, 1e-5);
}

}  // namespace

torch::Tensor ProbeBatch(int64_t n, int64_t channels, int64_t height,
                         int64_t width) {
  const int64_t numel = n * channels * height * width;
  // A ramp folded by a prime: varied, deterministic values in [0, 1).
  return torch::arange(numel, torch::kFloat)
      .fmod(97.0)
      .div(97.0)
      .reshape({n, channels, height, width});
}

bool ProbeChannelsLast(TrainableModel& model, const torch::Tensor& probe) {
  model.SetTraining(false);
  const std::vector<torch::Tensor> params = TrainableParameters(model);
  const ProbeRun plain = Run(model, probe, params);
  if (!plain.ok) return false;
  UseChannelsLast(model);
  const ProbeRun nhwc =
      Run(model, probe.contiguous(at::MemoryFormat::ChannelsLast), params);
  bool same = nhwc.ok && Close(plain.output, nhwc.output) &&
              plain.grads.size() == nhwc.grads.size();
  for (size_t i = 0; same && i < plain.grads.size(); ++i) {
    same = Close(plain.grads[i], nhwc.grads[i]);
  }
  if (!same) UseContiguous(model);
  return same;
}

}  // namespace gradsync
