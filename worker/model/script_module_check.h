// CheckScriptModule: what a loaded TorchScript module (one that passed
// CheckScriptArchive, script_archive.h) must pass before any of its code
// runs: a model may compute on tensors, nothing else.
//
// Walked: every function of the module's compilation unit (so every method
// of every submodule, helper function and class method), and every forward
// hook and pre-hook of every submodule, into every block (if, loop) of their
// graphs. Refused, naming the function and the op (FAILED_PRECONDITION):
//   - ops outside the aten:: and prim:: namespaces (custom and extension
//     ops, profiler ops), prim::PythonOp, and the ops that reach files
//     (aten::save, aten::from_file);
//   - aten ops that take a string argument, unless the op is on a short
//     vetted list (string helpers, einsum equations, interpolation and
//     padding modes, ...): a string is how an op names a file;
//   - calls through an interface type (what runs is chosen at run time)
//     and values of torch.classes types (native objects);
//   - dropout or batch norm with a constant training flag: a traced module
//     (torch.jit.trace) keeps the mode it was traced in;
//   - a module with no trainable floating-point parameter (INVALID_ARGUMENT:
//     nothing to train, e.g. a frozen module).
// Thread safety: reads the module; safe while nothing mutates it.
#pragma once

#include <torch/script.h>

#include "absl/status/status.h"

namespace gradsync {

absl::Status CheckScriptModule(const torch::jit::Module& module);

}  // namespace gradsync
