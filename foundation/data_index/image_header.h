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
// above or its header is cut short. The loader decodes nothing else.
std::optional<DeclaredSize> ReadDeclaredSize(absl::string_view bytes);

// The name of a format a decoder (OpenCV) would open by its content but
// whose size ReadDeclaredSize does not read (BigTIFF, PAM, PFM, Radiance
// HDR, OpenEXR, JPEG 2000, Sun raster, GIF), for the refusal; "" for
// anything else.
absl::string_view UncheckedFormatName(absl::string_view bytes);

}  // namespace gradsync
