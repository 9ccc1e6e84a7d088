// Exceptions from LibTorch (c10::Error), OpenCV (cv::Exception), the
// allocator (std::bad_alloc) and the standard library turned into Status at
// the data plane's boundaries (the trainer, the loader's threads, the
// reducer's thread), so a failing task fails with a reason instead of
// ending the worker process. Used across the data plane; the loader is its
// lowest library.
// Thread safety: pure functions.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// RESOURCE_EXHAUSTED for std::bad_alloc and LibTorch's allocation failures
// (also when a TorchScript op's failure carries them), INTERNAL otherwise; the
// message is "<doing>: <what>" (c10::Error without its C++ backtrace).
absl::Status StatusFromException(const std::exception& e,
                                 absl::string_view doing);

// True when an error's text says an allocation failed: LibTorch's CPU and
// CUDA allocators, the worker's tensor memory limit
// (worker/train/host_tensor_limit.h).
bool IsOutOfMemoryText(absl::string_view text);

// fn() (a Status or StatusOr), or the Status of what it threw.
template <typename F>
auto GuardExceptions(absl::string_view doing, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return StatusFromException(e, doing);
  } catch (...) {
    return absl::InternalError(std::string(doing) +
                               ": an exception that is not a std::exception");
  }
}

}  // namespace gradsync
