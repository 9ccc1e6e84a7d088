#include "worker/model/script_error.h"

#include <c10/util/Exception.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "loader/exception_status.h"

namespace gradsync {
namespace {

// "RuntimeError: ...", "IndexError: ...": a word ending in "Error" first.
bool IsErrorLine(absl::string_view line) {
  const size_t colon = line.find(": ");
  if (colon == absl::string_view::npos) return false;
  const absl::string_view kind = line.substr(0, colon);
  if (!absl::EndsWith(kind, "Error")) return false;
  for (char ch : kind) {
    const bool word = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
    if (!word) return false;
  }
  return true;
}

}  // namespace

std::string ScriptErrorLine(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  const std::string text =
      c10 != nullptr ? c10->what_without_backtrace() : std::string(e.what());
  const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (IsErrorLine(*it)) return std::string(*it);
  }
  return std::string(lines.front());
}

absl::Status ScriptCallFailed(absl::string_view doing,
                              const std::exception& e) {
  const std::string reason = ScriptErrorLine(e);
  const std::string message = absl::StrCat("model file: ", doing, ": ", reason);
  return IsOutOfMemoryText(reason) ? absl::ResourceExhaustedError(message)
                                   : absl::InvalidArgumentError(message);
}

}  // namespace gradsync
