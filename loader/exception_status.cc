#include "loader/exception_status.h"

#include <c10/util/Exception.h>

#include <new>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status StatusFromException(const std::exception& e,
                                 absl::string_view doing) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(doing, ": out of memory (", e.what(), ")"));
  }
  // c10::Error without its C++ backtrace; the TorchScript interpreter
  // rethrows what a scripted op threw as a std::runtime_error carrying the
  // message (and the script's traceback).
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  const std::string what =
      c10 != nullptr ? c10->what_without_backtrace() : std::string(e.what());
  const std::string message = absl::StrCat(doing, ": ", what);
  return IsOutOfMemoryText(what) ? absl::ResourceExhaustedError(message)
                                 : absl::InternalError(message);
}

bool IsOutOfMemoryText(absl::string_view text) {
  return absl::StrContains(text, "can't allocate memory") ||
         absl::StrContains(text, "out of memory");
}

}  // namespace gradsync
