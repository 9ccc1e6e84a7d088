#include "foundation/text/terminal_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

std::string Escaped(absl::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xC2 && i + 1 < text.size() &&
                    static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    const bool kept = keep_newlines && (c == '\n' || c == '\t');
    if ((c < 0x20 && !kept) || c == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else if (c1) {
      absl::StrAppendFormat(&out, "\\xc2\\x%02x",
                            static_cast<unsigned char>(text[++i]));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace

std::string TerminalSafe(absl::string_view text) {
  return Escaped(text, /*keep_newlines=*/true);
}

std::string OneLine(absl::string_view text) {
  return Escaped(text, /*keep_newlines=*/false);
}

void LogLine(absl::string_view program, absl::string_view line, std::FILE* to) {
  const std::string whole = absl::StrCat(program, ": ", OneLine(line), "\n");
  std::fwrite(whole.data(), 1, whole.size(), to);
}

}  // namespace gradsync
