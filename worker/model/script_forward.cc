#include "worker/model/script_forward.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "worker/model/script_error.h"

namespace gradsync {
namespace {

std::string Shape(const at::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

}  // namespace

absl::StatusOr<at::Tensor> ScriptForward(torch::jit::Module& module,
                                         const at::Tensor& batch,
                                         int64_t outputs) {
  const c10::optional<torch::jit::Method> forward =
      module.find_method("forward");
  if (!forward.has_value()) {
    return absl::InvalidArgumentError("model file: the module has no forward");
  }
  const c10::FunctionSchema& schema = forward->function().getSchema();
  const auto& args = schema.arguments();
  if (args.size() != 2 || args[1].type()->kind() != c10::TypeKind::TensorType) {
    std::ostringstream text;
    text << schema;
    return absl::InvalidArgumentError(
        absl::StrCat("model file: forward must take (self, Tensor x), the "
                     "batch; it is ",
                     text.str()));
  }
  torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
  c10::IValue result;
  try {
    result = module.forward({batch});
  } catch (const std::exception& e) {
    return ScriptCallFailed(
        absl::StrCat("forward fails on a batch of shape ", Shape(batch)), e);
  }
  if (!result.isTensor()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file: forward returned a ", result.type()->repr_str(),
        "; it must return one Tensor shaped [N, outputs]"));
  }
  at::Tensor out = result.toTensor();
  const bool shaped = out.dim() == 2 && out.size(0) == batch.size(0) &&
                      (outputs <= 0 || out.size(1) == outputs);
  if (!shaped) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file: forward returned shape ", Shape(out), " for a batch of ",
        batch.size(0), "; expected [", batch.size(0), ", ",
        outputs > 0 ? absl::StrCat(outputs) : std::string("outputs"), "]"));
  }
  return out;
}

}  // namespace gradsync
