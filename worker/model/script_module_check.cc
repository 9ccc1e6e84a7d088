#include "worker/model/script_module_check.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// Ops no model needs, each a way out of the tensor world.
const std::set<std::string>& Denied() {
  static const std::set<std::string> kDenied = {
      "aten::save", "aten::from_file", "prim::PythonOp",
      "aten::_save_jit_module", "aten::_save_for_mobile"};
  return kDenied;
}

// aten ops that may take a string argument: string helpers, and tensor ops
// whose strings are modes or equations (none names a file).
const std::set<std::string>& VettedStringOps() {
  static const std::set<std::string> kVetted = {
      // strings and containers keyed by them
      "aten::format", "aten::str", "aten::join", "aten::len", "aten::eq",
      "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::add",
      "aten::__getitem__", "aten::__contains__", "aten::__is__",
      "aten::__isnot__", "aten::dict", "aten::keys", "aten::values",
      "aten::items", "aten::get", "aten::setdefault", "aten::_set_item",
      "aten::pop", "aten::list", "aten::append", "aten::warn", "aten::strip",
      "aten::split", "aten::lower", "aten::upper", "aten::startswith",
      "aten::endswith", "aten::replace", "aten::find", "aten::count",
      "aten::slice", "aten::Float", "aten::Int", "aten::Bool",
      // modes and equations of tensor ops
      "aten::einsum", "aten::__interpolate", "aten::pad", "aten::div",
      "aten::div_", "aten::gelu", "aten::gelu_", "aten::stft", "aten::istft",
      "aten::searchsorted", "aten::norm", "aten::linalg_norm",
      "aten::linalg_matrix_norm", "aten::device", "aten::grid_sampler",
      "aten::upsample_bilinear2d", "aten::upsample_nearest2d"};
  return kVetted;
}

// Ops with an argument that chooses training or inference behaviour. A
// scripted module passes its `training` attribute there; a traced one has
// the constant it was traced with, and never switches mode.
const std::map<std::string, std::string>& ModeArguments() {
  static const std::map<std::string, std::string> kMode = {
      {"aten::dropout", "train"},
      {"aten::dropout_", "train"},
      {"aten::feature_dropout", "train"},
      {"aten::feature_dropout_", "train"},
      {"aten::alpha_dropout", "train"},
      {"aten::alpha_dropout_", "train"},
      {"aten::feature_alpha_dropout", "train"},
      {"aten::feature_alpha_dropout_", "train"},
      {"aten::batch_norm", "training"}};
  return kMode;
}

bool IsTorchClass(const c10::TypePtr& type) {
  const auto cls = type->cast<c10::ClassType>();
  return cls != nullptr && cls->name().has_value() &&
         absl::StartsWith(cls->name()->qualifiedName(),
                          "__torch__.torch.classes");
}

absl::Status Refuse(const torch::jit::Function& function,
                    const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat("model file: ", function.qualname().qualifiedName(), " ",
                   what, ": a model may compute on tensors, nothing else"));
}

absl::Status CheckNode(const torch::jit::Function& function,
                       const torch::jit::Node* node) {
  const c10::Symbol kind = node->kind();
  const std::string op = kind.toQualString();
  if (!kind.is_aten() && !kind.is_prim()) {
    return Refuse(function,
                  absl::StrCat("calls ", op, " (outside aten:: and prim::)"));
  }
  if (Denied().count(op) > 0) {
    return Refuse(function, absl::StrCat("calls ", op));
  }
  if (kind.is_aten() && VettedStringOps().count(op) == 0) {
    if (const c10::FunctionSchema* schema = node->maybeSchema()) {
      for (const c10::Argument& arg : schema->arguments()) {
        if (arg.type()->kind() == c10::TypeKind::StringType) {
          return Refuse(function,
                        absl::StrCat("calls ", op, " with a string argument '",
                                     arg.name(),
                                     "' (string-taking ops are allowed only "
                                     "from a vetted list)"));
        }
      }
    }
  }
  if (auto mode = ModeArguments().find(op); mode != ModeArguments().end()) {
    const c10::FunctionSchema* schema = node->maybeSchema();
    const auto index =
        schema ? schema->argumentIndexWithName(mode->second) : c10::nullopt;
    if (index.has_value() &&
        static_cast<size_t>(*index) < node->inputs().size() &&
        node->input(*index)->node()->kind() == c10::prim::Constant) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model file: ", function.qualname().qualifiedName(), " calls ", op,
          " with a constant '", mode->second,
          "' (a traced module keeps the mode it was traced in, so it would "
          "never switch between training and evaluation): script it with "
          "torch.jit.script"));
    }
  }
  if (kind == c10::prim::CallMethod && node->inputs().size() > 0 &&
      node->input(0)->type()->cast<c10::InterfaceType>() != nullptr) {
    return Refuse(function, "calls a method through an interface type");
  }
  for (const torch::jit::Value* v : node->outputs()) {
    if (IsTorchClass(v->type())) {
      return Refuse(function, absl::StrCat("makes a torch.classes object (",
                                           v->type()->repr_str(), ")"));
    }
  }
  for (const torch::jit::Value* v : node->inputs()) {
    if (IsTorchClass(v->type())) {
      return Refuse(function, absl::StrCat("uses a torch.classes object (",
                                           v->type()->repr_str(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFunction(torch::jit::Function* function) {
  std::shared_ptr<torch::jit::Graph> graph;
  try {
    graph = torch::jit::toGraphFunction(*function).graph();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return Refuse(*function, absl::StrCat("cannot be read as a graph: ",
                                          what.substr(0, what.find('\n'))));
  }
  std::vector<const torch::jit::Block*> blocks = {graph->block()};
  while (!blocks.empty()) {
    const torch::jit::Block* block = blocks.back();
    blocks.pop_back();
    for (const torch::jit::Node* node : block->nodes()) {
      if (absl::Status s = CheckNode(*function, node); !s.ok()) return s;
      for (const torch::jit::Block* inner : node->blocks()) {
        blocks.push_back(inner);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckScriptModule(const torch::jit::Module& module) {
  std::set<torch::jit::Function*> functions;
  for (torch::jit::Function* f :
       module._ivalue()->compilation_unit()->get_functions()) {
    functions.insert(f);
  }
  for (const torch::jit::Module& m : module.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      functions.insert(&method.function());
    }
    for (torch::jit::Function* hook : m.type()->getForwardHooks()) {
      functions.insert(hook);
    }
    for (torch::jit::Function* hook : m.type()->getForwardPreHooks()) {
      functions.insert(hook);
    }
  }
  for (torch::jit::Function* f : functions) {
    if (absl::Status s = CheckFunction(f); !s.ok()) return s;
  }
  bool trainable = false;
  for (const at::Tensor& p : module.parameters(/*recurse=*/true)) {
    trainable |= p.requires_grad() && p.is_floating_point();
  }
  if (!trainable) {
    return absl::InvalidArgumentError(
        "model file: the module has no trainable floating-point parameter "
        "(frozen, or parameters with requires_grad=False): nothing to train");
  }
  return absl::OkStatus();
}

}  // namespace gradsync
