#include "coordinator/wire/secrets.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace gradsync {

bool KeysEqual(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

absl::StatusOr<std::string> LoadToken(const std::string& value,
                                      const std::string& file,
                                      const std::string& what) {
  if (!value.empty() && !file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": give the token or a token file, not both"));
  }
  if (file.empty()) return value;
  std::ifstream in(file);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(what, ": cannot read token file ", file));
  }
  std::stringstream contents;
  contents << in.rdbuf();
  std::string token(absl::StripTrailingAsciiWhitespace(contents.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": token file ", file, " is empty"));
  }
  return token;
}

std::string RedactSecrets(std::string text,
                          std::initializer_list<absl::string_view> secrets) {
  for (absl::string_view secret : secrets) {
    if (secret.empty()) continue;
    text = absl::StrReplaceAll(text, {{secret, "[redacted]"}});
  }
  return text;
}

}  // namespace gradsync
