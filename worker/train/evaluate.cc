#include "worker/train/evaluate.h"

#include <algorithm>

#include "worker/train/precision.h"

namespace gradsync {

absl::StatusOr<EvalReport> Evaluate(ImageClassifier& model,
                                    const torch::Device& device,
                                    Precision precision, BatchLoader& loader,
                                    const std::vector<int64_t>& indices,
                                    int epoch, Communicator& comm) {
  model.eval();
  torch::NoGradGuard no_grad;
  if (absl::Status s = loader.StartEpoch(epoch, indices); !s.ok()) return s;
  // Summed on the device and read once, not once per batch.
  torch::Tensor correct = torch::zeros(
      {}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  torch::Tensor loss_sum = torch::zeros_like(correct);
  int64_t count = 0;
  Batch batch;
  while (true) {
    auto got = loader.Next(&batch);
    if (!got.ok()) return got.status();
    if (!*got) break;
    torch::Tensor logits;
    {
      // In the training precision, as Lightning evaluates.
      AutocastScope autocast(precision, device);
      logits = model.forward(batch.images.to(device));
    }
    logits = logits.to(torch::kFloat);
    const torch::Tensor labels = batch.labels.to(device);
    loss_sum += torch::nn::functional::cross_entropy(
        logits, labels,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(
            torch::kSum));
    correct += logits.argmax(1).eq(labels).sum();
    count += batch.images.size(0);
  }
  torch::Tensor totals = torch::tensor(
      {static_cast<float>(correct.item<double>()),
       static_cast<float>(loss_sum.item<double>()), static_cast<float>(count)});
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
