#include "worker/train/evaluate.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "worker/train/loss.h"
#include "worker/train/precision.h"

namespace gradsync {

absl::StatusOr<EvalReport> Evaluate(
    TrainableModel& model, const torch::Device& device, Precision precision,
    LossKind loss, BatchLoader& loader, const std::vector<int64_t>& indices,
    int epoch, Communicator& comm, StepDeadline& deadline) {
  model.SetTraining(false);
  torch::NoGradGuard no_grad;
  if (absl::Status s = loader.StartEpoch(epoch, indices); !s.ok()) return s;
  // Summed on the device and read once, not once per batch.
  torch::Tensor correct = torch::zeros(
      {}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  torch::Tensor loss_sum = torch::zeros_like(correct);
  int64_t count = 0;
  bool classes = true;
  Batch batch;
  while (true) {
    auto got = loader.Next(&batch);
    if (!got.ok()) return got.status();
    if (!*got) break;
    std::optional<StepDeadline::Scope> watched(deadline.Watch(absl::StrCat(
        "evaluation batch ", batch.index + 1, " of epoch ", epoch + 1)));
    absl::StatusOr<torch::Tensor> logits;
    {
      // In the training precision, as Lightning evaluates.
      AutocastScope autocast(precision, device);
      logits = model.Forward(batch.images.to(device));
    }
    if (!logits.ok()) return logits.status();
    const torch::Tensor out = logits->to(torch::kFloat);
    const torch::Tensor labels = batch.labels.to(device);
    const int64_t n = batch.images.size(0);
    auto mean = ComputeLoss(loss, model, out, labels);
    watched.reset();
    if (!mean.ok()) return mean.status();
    loss_sum += mean->to(torch::kDouble) * static_cast<double>(n);
    classes = classes && IsClassTarget(labels);
    if (classes) correct += out.argmax(1).eq(labels).sum();
    count += n;
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
  report.accuracy =
      classes ? totals[0].item<float>() / std::max(1.0f, samples) : -1;
  report.loss = totals[1].item<float>() / std::max(1.0f, samples);
  return report;
}

}  // namespace gradsync
