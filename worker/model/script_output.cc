#include "worker/model/script_output.h"

#include <c10/util/Exception.h>
#include <torch/csrc/jit/runtime/print_handler.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

absl::Mutex& SinkMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}

// Guarded by SinkMutex().
std::function<void(const std::string&)>& Sink() {
  static auto* sink = new std::function<void(const std::string&)>();
  return *sink;
}

void Emit(const std::string& prefix, const std::string& text) {
  // print() ends its text with a newline: not part of the line.
  const std::string line =
      absl::StrCat(prefix, OneLine(absl::StripTrailingAsciiWhitespace(text)));
  absl::MutexLock lock(&SinkMutex());
  if (Sink()) {
    Sink()(line);
  } else {
    LogLine("gradsync-worker", line);
  }
}

void Print(const std::string& text) { Emit("model: ", text); }

class EscapingWarnings : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation& /*where*/, const std::string& msg,
               const bool /*verbatim*/) override {
    Emit("model warning: ", msg);
  }
};

}  // namespace

void RouteModelOutput(std::function<void(const std::string& line)> sink) {
  {
    absl::MutexLock lock(&SinkMutex());
    Sink() = std::move(sink);
  }
  static EscapingWarnings* warnings = new EscapingWarnings();
  torch::jit::setPrintHandler(&Print);
  c10::Warning::set_warning_handler(warnings);
}

}  // namespace gradsync
