#include "coordinator/control/bounded_text.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

std::string CutAtCharacter(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;  // text[end] continues the character before it
  }
  return std::string(text.substr(0, end));
}

std::string Bounded(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::string kept = CutAtCharacter(text, max_bytes);
  const size_t more = text.size() - kept.size();
  return absl::StrCat(kept, " ... (", more, " more bytes)");
}

}  // namespace gradsync
