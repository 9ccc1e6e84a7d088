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
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) {
    const std::string what = c10->what_without_backtrace();
    // DefaultCPUAllocator / CUDA caching allocator failures.
    const bool memory = absl::StrContains(what, "can't allocate memory") ||
                        absl::StrContains(what, "out of memory");
    const std::string message = absl::StrCat(doing, ": ", what);
    return memory ? absl::ResourceExhaustedError(message)
                  : absl::InternalError(message);
  }
  return absl::InternalError(absl::StrCat(doing, ": ", e.what()));
}

}  // namespace gradsync
