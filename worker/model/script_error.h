// What a scripted module's failure says, in one line. The TorchScript
// interpreter rethrows an op's error as "The following operation failed in
// the TorchScript interpreter." and the script's traceback, with the op's
// own message on a line "<Kind>Error: ..."; that line is the reason.
// Thread safety: pure functions.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// The last "<Kind>Error: ..." line of e.what(), else its first line (for a
// c10::Error without its C++ backtrace).
std::string ScriptErrorLine(const std::exception& e);

// "model file: <doing>: <reason>": RESOURCE_EXHAUSTED when the module ran
// out of memory (IsOutOfMemoryText, loader/exception_status.h),
// INVALID_ARGUMENT otherwise (the module's own failure).
absl::Status ScriptCallFailed(absl::string_view doing, const std::exception& e);

}  // namespace gradsync
