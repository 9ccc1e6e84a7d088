// The key a LibTorch optimizer files a parameter's state under.
//
// LibTorch keys torch::optim::Optimizer::state() by the parameter's
// TensorImpl: as the address printed into a string up to PyTorch 2.10 (and in
// Debian's LibTorch), as the address itself (void*) in later releases. Code
// that reads or fills optimizer state calls OptimizerStateKeyOf() and builds
// against both. Stateless; safe from any thread.
#pragma once

#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsync {

// The key type of this LibTorch's optimizer state map.
using OptimizerStateKey = typename std::decay_t<
    decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

namespace optimizer_state_key_internal {

// The string form: the address as operator<< prints a pointer, which is what
// LibTorch's own key was (c10::guts::to_string of the TensorImpl*).
inline std::string KeyAs(const c10::TensorImpl* impl, std::string*) {
  std::ostringstream out;
  out << static_cast<const void*>(impl);
  return out.str();
}

inline void* KeyAs(c10::TensorImpl* impl, void**) { return impl; }

}  // namespace optimizer_state_key_internal

// The key `param`'s state has (or gets) in any torch::optim::Optimizer.
inline OptimizerStateKey OptimizerStateKeyOf(const at::Tensor& param) {
  return optimizer_state_key_internal::KeyAs(
      param.unsafeGetTensorImpl(), static_cast<OptimizerStateKey*>(nullptr));
}

}  // namespace gradsync
