#include "worker/model/memory_format.h"

namespace gradsync {
namespace {

void Relayout(torch::Tensor t) {
  if (t.dim() != 4 || IsChannelsLast(t)) return;
  // empty() with the format sets channels-last strides even where a size-1
  // dimension makes contiguous() a no-op.
  torch::Tensor laid_out = torch::empty(
      t.sizes(), t.options().memory_format(at::MemoryFormat::ChannelsLast));
  laid_out.copy_(t);
  t.set_data(laid_out);
}

}  // namespace

void UseContiguous(TrainableModel& model) {
  torch::NoGradGuard no_grad;
  // As Relayout, empty() with the format: a size-1 dimension can make a
  // channels-last tensor count as contiguous and contiguous() a no-op.
  auto restore = [](torch::Tensor t) {
    if (!IsChannelsLast(t)) return;
    torch::Tensor laid_out = torch::empty(
        t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
    laid_out.copy_(t);
    t.set_data(laid_out);
  };
  for (NamedTensor& p : model.NamedParameters()) restore(p.value);
  for (NamedTensor& b : model.NamedBuffers()) restore(b.value);
}

bool IsChannelsLast(const torch::Tensor& t) {
  return t.dim() == 4 &&
         t.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
}

void UseChannelsLast(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& t : tensors) Relayout(t);
}

void UseChannelsLast(TrainableModel& model) {
  torch::NoGradGuard no_grad;
  for (NamedTensor& p : model.NamedParameters()) Relayout(p.value);
  for (NamedTensor& b : model.NamedBuffers()) Relayout(b.value);
}

}  // namespace gradsync
