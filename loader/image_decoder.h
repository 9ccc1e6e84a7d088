// Image decoding with OpenCV (JPEGs with libjpeg-turbo's TurboJPEG API where
// built with it: the same pixels, decoded straight to RGB). Errors name the
// file: unreadable, empty, truncated or not an image. OpenCV exceptions are
// caught here.
//
// Pure functions; thread-safe.
#pragma once

#include <opencv2/core.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

// Decodes `path` into an 8-bit image: channels 0 = as stored (1 or 3),
// 1 = grayscale, 3 = RGB (red first, as PIL and torchvision). An alpha
// channel is dropped.
absl::StatusOr<cv::Mat> DecodeImageFile(const std::string& path, int channels);

// The same for bytes already in memory; `path` only names them in errors.
absl::StatusOr<cv::Mat> DecodeImageBytes(const std::string& bytes, int channels,
                                         const std::string& path);

}  // namespace gradsync
