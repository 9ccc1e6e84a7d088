// SHA-256 (OpenSSL's libcrypto) as lower-case hex: the checksum of model
// snapshots, computed by the uploader, the coordinator and the downloader.
// Sha256Hex hashes bytes at hand; Sha256 hashes a stream piece by piece, so
// that big snapshots are checked as they pass without a second read.
// Thread safety: Sha256Hex is thread-safe; one Sha256 object is not.
#pragma once

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

std::string Sha256Hex(absl::string_view data);

// Whether `s` is a digest as Sha256Hex spells it (64 lower-case hex
// digits).
bool IsSha256Hex(absl::string_view s);

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(absl::string_view data);
  // The digest of everything given so far; the object starts over.
  std::string HexDigest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gradsync
