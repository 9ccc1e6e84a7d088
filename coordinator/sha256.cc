#include "coordinator/sha256.h"

#include <openssl/evp.h>

#include "absl/strings/str_format.h"

namespace gradsync {

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    absl::StrAppendFormat(&hex, "%02x", digest[i]);
  }
  return hex;
}

}  // namespace gradsync
