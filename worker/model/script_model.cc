#include "worker/model/script_model.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/version.h>

#include <cstdio>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "foundation/text/terminal_text.h"
#include "worker/model/script_error.h"
#include "worker/model/script_forward.h"
#include "worker/model/script_module_check.h"

namespace gradsync {
namespace {

std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string SchemaText(const c10::FunctionSchema& schema) {
  std::ostringstream text;
  text << schema;
  return text.str();
}

// A loss method, when there is one, takes (self, Tensor, Tensor) and
// returns a Tensor.
absl::Status CheckLossMethod(const torch::jit::Module& module) {
  const c10::optional<torch::jit::Method> loss = module.find_method("loss");
  if (!loss.has_value()) return absl::OkStatus();
  const c10::FunctionSchema& schema = loss->function().getSchema();
  const auto& args = schema.arguments();
  const auto& returns = schema.returns();
  const bool shaped = args.size() == 3 &&
                      args[1].type()->kind() == c10::TypeKind::TensorType &&
                      args[2].type()->kind() == c10::TypeKind::TensorType &&
                      returns.size() == 1 &&
                      returns[0].type()->kind() == c10::TypeKind::TensorType;
  if (!shaped) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file: loss must take (self, Tensor output, Tensor target) and "
        "return a Tensor; it is ",
        SchemaText(schema)));
  }
  return absl::OkStatus();
}

std::set<std::string> NamesIn(const std::string& text) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) names.insert(std::string(line));
  }
  return names;
}

template <typename Items>
std::vector<NamedTensor> Named(const Items& items,
                               const std::set<std::string>& non_persistent) {
  std::vector<NamedTensor> out;
  for (const auto& item : items) {
    out.push_back(
        {item.name, item.value, non_persistent.count(item.name) == 0});
  }
  return out;
}

}  // namespace

ScriptModel::ScriptModel(torch::jit::Module module, int64_t outputs,
                         std::set<std::string> non_persistent_buffers)
    : module_(std::move(module)),
      outputs_(outputs),
      non_persistent_(std::move(non_persistent_buffers)),
      has_loss_(module_.find_method("loss").has_value()) {}

absl::StatusOr<torch::Tensor> ScriptModel::Forward(const torch::Tensor& batch) {
  return ScriptForward(module_, batch, outputs_);
}

std::vector<NamedTensor> ScriptModel::NamedParameters() {
  return Named(module_.named_parameters(/*recurse=*/true), {});
}

std::vector<NamedTensor> ScriptModel::NamedBuffers() {
  return Named(module_.named_buffers(/*recurse=*/true), non_persistent_);
}

void ScriptModel::SetTraining(bool on) { module_.train(on); }

void ScriptModel::To(const torch::Device& device) { module_.to(device); }

absl::Status ScriptModel::ExportTorchScript(const std::string& path) {
  const std::string staged = path + ".tmp";
  try {
    torch::NoGradGuard no_grad;
    torch::jit::Module copy = module_.clone();
    copy.to(torch::kCPU);
    std::string names;
    for (const std::string& n : non_persistent_)
      absl::StrAppend(&names, n, "\n");
    copy.save(staged, {{kNonPersistentBuffersFile, names}});
  } catch (const std::exception& e) {
    std::remove(staged.c_str());
    return absl::InternalError(absl::StrCat("cannot write the trained module ",
                                            path, ": ", FirstLine(e.what())));
  }
  if (std::rename(staged.c_str(), path.c_str()) != 0) {
    std::remove(staged.c_str());
    return absl::InternalError(
        absl::StrCat("cannot write the trained module ", path));
  }
  return absl::OkStatus();
}

bool ScriptModel::HasLoss() const { return has_loss_; }

absl::StatusOr<torch::Tensor> ScriptModel::Loss(const torch::Tensor& output,
                                                const torch::Tensor& target) {
  if (!HasLoss()) return TrainableModel::Loss(output, target);
  torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
  c10::IValue result;
  try {
    result = module_.get_method("loss")({output, target});
  } catch (const std::exception& e) {
    return ScriptCallFailed("loss fails", e);
  }
  if (!result.isTensor() || result.toTensor().numel() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file: loss must return a one-element Tensor; it returned ",
        result.isTensor() ? absl::StrCat("a Tensor of ",
                                         result.toTensor().numel(), " elements")
                          : result.type()->repr_str()));
  }
  return result.toTensor().reshape({});
}

absl::StatusOr<std::unique_ptr<ScriptModel>> LoadScriptModel(
    absl::string_view bytes, int64_t outputs,
    const ScriptArchiveLimits& limits) {
  if (absl::Status s = CheckScriptArchive(bytes, limits); !s.ok()) return s;
  torch::jit::Module module;
  torch::jit::ExtraFilesMap extra{{kNonPersistentBuffersFile, ""},
                                  {kPyTorchVersionFile, ""}};
  try {
    std::istringstream in{std::string(bytes)};
    module = torch::jit::load(in, torch::kCPU, extra);
  } catch (const std::exception& e) {
    // An op this LibTorch lacks (a module scripted by a newer PyTorch) is
    // reported here, by name. LibTorch reads the extra files first.
    const std::string by = OneLine(extra[kPyTorchVersionFile].substr(0, 40));
    return absl::FailedPreconditionError(
        absl::StrCat("model file: this worker's LibTorch ", TORCH_VERSION,
                     " cannot load it (scripted by ",
                     by.empty() ? std::string("a newer PyTorch?")
                                : absl::StrCat("PyTorch ", by),
                     "): ", FirstLine(e.what())));
  }
  if (absl::Status s = CheckScriptModule(module); !s.ok()) return s;
  if (absl::Status s = CheckLossMethod(module); !s.ok()) return s;
  std::set<std::string> non_persistent =
      NamesIn(extra[kNonPersistentBuffersFile]);
  std::set<std::string> buffers;
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    buffers.insert(b.name);
  }
  for (const std::string& name : non_persistent) {
    if (buffers.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model file: ", kNonPersistentBuffersFile,
                       " names a buffer the module does not have: ", name));
    }
  }
  return std::make_unique<ScriptModel>(std::move(module), outputs,
                                       std::move(non_persistent));
}

}  // namespace gradsync
