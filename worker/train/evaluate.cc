#include "worker/train/evaluate.h"

#include <algorithm>

namespace gradsync {

absl::StatusOr<EvalReport> Evaluate(ImageClassifier& model,
                                    const torch::Device& device,
                                    BatchLoader& loader,
                                    const std::vector<int64_t>& indices,
                                    int epoch, Communicator& comm) {
  model.eval();
  torch::NoGradGuard no_grad;
  if (absl::Status s = loader.StartEpoch(epoch, indices); !s.ok()) return s;
  double correct = 0, loss_sum = 0, count = 0;
  Batch batch;
  while (true) {
    auto got = loader.Next(&batch);
    if (!got.ok()) return got.status();
    if (!*got) break;
    torch::Tensor logits =
        model.forward(batch.images.to(device)).to(torch::kCPU);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, batch.labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(
                        torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(batch.labels).sum().item<double>();
    count += batch.images.size(0);
  }
  torch::Tensor totals =
      torch::tensor({static_cast<float>(correct), static_cast<float>(loss_sum),
                     static_cast<float>(count)});
  if (absl::Status s = comm.AllReduce(totals, ReduceOp::kSum); !s.ok()) {
    return s;
  }
  const float samples = totals[2].item<float>();
  EvalReport report;
  report.epoch = epoch;
  report.samples = static_cast<int64_t>(samples);
  report.accuracy = totals[0].item<float>() / std::max(1.0f, samples);
  report.loss = totals[1].item<float>() / std::max(1.0f, samples);
  return report;
}

}  // namespace gradsync
