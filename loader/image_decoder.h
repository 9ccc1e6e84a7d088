// Image decoding: JPEGs with libjpeg-turbo's TurboJPEG API where built with
// it (decoded straight to RGB), everything else (and JPEGs TurboJPEG leaves
// alone) with OpenCV where built with it. Errors name the file: unreadable,
// not a regular file, larger than the byte limit, declaring more pixels than
// the pixel limit (checked from the header before any decoder allocates:
// decompression bombs), empty, truncated, not an image, in a format whose
// header the loader does not check (INVALID_ARGUMENT naming the format:
// only PNG, JPEG, BMP, PBM/PGM/PPM, WebP and classic TIFF reach a decoder,
// whatever the file's extension), or a format this build cannot decode
// (UNIMPLEMENTED, naming the CMake option). OpenCV
// exceptions are caught here.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "loader/image.h"

namespace gradsync {

struct DecodeLimits {
  // Declared width x height; PIL's DecompressionBombWarning threshold, far
  // above ImageNet's and LFW's images. RESOURCE_EXHAUSTED above it.
  int64_t max_pixels = 89478485;
  // File size; RESOURCE_EXHAUSTED above it, before reading.
  int64_t max_file_bytes = int64_t{256} << 20;
};

// Decodes `path` into an 8-bit image: channels 0 = as stored (1 or 3),
// 1 = grayscale, 3 = RGB (red first, as PIL and torchvision). An alpha
// channel is dropped. Only regular files are read (a FIFO or device named
// x.png is refused, never waited on).
absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels,
                                      const DecodeLimits& limits = {});

// The same for bytes already in memory; `path` only names them in errors.
absl::StatusOr<Image> DecodeImageBytes(const std::string& bytes, int channels,
                                       const std::string& path,
                                       const DecodeLimits& limits = {});

}  // namespace gradsync
