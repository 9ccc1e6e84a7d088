#include "worker/train/loss.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {
namespace {

namespace F = torch::nn::functional;

struct Named {
  LossKind kind;
  const char* name;
};
constexpr Named kLosses[] = {{LossKind::kCrossEntropy, "cross_entropy"},
                             {LossKind::kNll, "nll"},
                             {LossKind::kMse, "mse"},
                             {LossKind::kBceWithLogits, "bce_with_logits"}};

std::string Shape(const torch::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

absl::Status Mismatch(LossKind kind, const torch::Tensor& output,
                      const torch::Tensor& target, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("loss ", LossName(kind), ": output ", Shape(output),
                   ", target ", Shape(target), ": ", why));
}

// Class indices as one-hot rows of `output`'s width and type, or float
// targets shaped like `output` as they are.
absl::StatusOr<torch::Tensor> DenseTarget(LossKind kind,
                                          const torch::Tensor& output,
                                          const torch::Tensor& target) {
  if (IsClassTarget(target)) {
    // one_hot refuses an index outside [0, width) (caught by the caller).
    return F::one_hot(target, output.size(1)).to(output.scalar_type());
  }
  if (target.sizes() != output.sizes()) {
    return Mismatch(kind, output, target,
                    "targets must be class indices [N] or shaped like the "
                    "output");
  }
  return target.to(output.scalar_type());
}

}  // namespace

absl::StatusOr<LossKind> ParseLoss(const std::string& name) {
  for (const Named& l : kLosses) {
    if (name == l.name) return l.kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "loss must be cross_entropy, nll, mse or bce_with_logits (got '", name,
      "')"));
}

const char* LossName(LossKind kind) {
  for (const Named& l : kLosses) {
    if (kind == l.kind) return l.name;
  }
  return "unknown";
}

bool IsClassTarget(const torch::Tensor& target) {
  return target.dim() == 1 && !at::isFloatingType(target.scalar_type()) &&
         target.scalar_type() != at::kBool;
}

absl::StatusOr<torch::Tensor> ComputeLoss(LossKind kind, TrainableModel& model,
                                          const torch::Tensor& output,
                                          const torch::Tensor& target) {
  if (model.HasLoss()) return model.Loss(output, target);
  try {
    switch (kind) {
      case LossKind::kCrossEntropy:
        return F::cross_entropy(output, target);
      case LossKind::kNll:
        if (!IsClassTarget(target)) {
          return Mismatch(kind, output, target, "nll takes class indices");
        }
        return F::nll_loss(output, target);
      case LossKind::kMse:
      case LossKind::kBceWithLogits: {
        auto dense = DenseTarget(kind, output, target);
        if (!dense.ok()) return dense.status();
        return kind == LossKind::kMse
                   ? F::mse_loss(output, *dense)
                   : F::binary_cross_entropy_with_logits(output, *dense);
      }
    }
  } catch (const c10::Error& e) {
    return Mismatch(kind, output, target, e.what_without_backtrace());
  }
  return absl::InvalidArgumentError("unknown loss");
}

}  // namespace gradsync
