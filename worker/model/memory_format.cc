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
