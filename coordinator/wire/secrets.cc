#include "coordinator/wire/secrets.h"

#include <algorithm>
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

namespace {

// At least kMinTokenLength printable ASCII characters, none of them a space
// ("" = no token passes through).
constexpr size_t kMinTokenLength = 8;

absl::StatusOr<std::string> CheckToken(std::string token,
                                       const std::string& what) {
  if (token.empty()) return token;
  const bool printable = std::all_of(
      token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (!printable || token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": a token is at least ", kMinTokenLength,
        " printable characters with no spaces or control characters (make "
        "one with: openssl rand -hex 32)"));
  }
  return token;
}

}  // namespace

absl::StatusOr<std::string> LoadToken(const std::string& value,
                                      const std::string& file,
                                      const std::string& what) {
  if (!value.empty() && !file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": give the token or a token file, not both"));
  }
  if (file.empty()) return CheckToken(value, what);
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
  return CheckToken(std::move(token), what);
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
