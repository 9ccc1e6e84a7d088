// The size an image file declares in its header, read without decoding, so
// that a decompression bomb (a 1 MB PNG declaring 30000x30000 pixels) is
// refused before a decoder allocates for it. Knows the formats the loader
// lists (HasImageExtension): PNG, JPEG, BMP, PBM/PGM/PPM, WebP, TIFF.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace gradsync {

struct DeclaredSize {
  int64_t width = 0;
  int64_t height = 0;
};

// The header's width and height; nullopt when `bytes` is none of the formats
// above or its header is cut short (the decoder then reports what it finds).
std::optional<DeclaredSize> ReadDeclaredSize(absl::string_view bytes);

}  // namespace gradsync
