// SHA-256 (OpenSSL's libcrypto) as lower-case hex: the checksum of model
// snapshots, computed by the uploader, the coordinator and the downloader.
// Thread-safe.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

std::string Sha256Hex(absl::string_view data);

}  // namespace gradsync
