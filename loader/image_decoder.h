// Image decoding: JPEGs with libjpeg-turbo's TurboJPEG API where built with
// it (decoded straight to RGB), everything else (and JPEGs TurboJPEG leaves
// alone) with OpenCV where built with it. Errors name the file: unreadable,
// empty, truncated, not an image, or a format this build cannot decode
// (UNIMPLEMENTED, naming the CMake option). OpenCV exceptions are caught
// here.
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "loader/image.h"

namespace gradsync {

// Decodes `path` into an 8-bit image: channels 0 = as stored (1 or 3),
// 1 = grayscale, 3 = RGB (red first, as PIL and torchvision). An alpha
// channel is dropped.
absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels);

// The same for bytes already in memory; `path` only names them in errors.
absl::StatusOr<Image> DecodeImageBytes(const std::string& bytes, int channels,
                                         const std::string& path);

}  // namespace gradsync
