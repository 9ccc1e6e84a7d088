// An image stored as a NumPy .npy file (what np.save writes for an 8-bit
// array): dtype uint8, C order, shape (H, W) or (H, W, C) with C 1 or 3,
// HWC as the loader's Image is. For WebDataset samples whose image member
// is <key>.npy (shard_dataset.h). The header is hostile: another magic,
// version, dtype or order, a shape that is not 2 or 3 small dimensions, a
// size past the decode limit's pixels, or data that does not hold exactly
// H x W x C bytes is INVALID_ARGUMENT (RESOURCE_EXHAUSTED for the pixel
// limit) naming `name`.
// Thread safety: a pure function.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "loader/image.h"
#include "loader/image_decoder.h"

namespace gradsync {

// `channels`: 0 as stored; 1 or 3 must be what is stored (an .npy array is
// used as it is, not converted).
absl::StatusOr<Image> DecodeNpyImage(const std::string& bytes, int channels,
                                     const std::string& name,
                                     const DecodeLimits& limits = {});

}  // namespace gradsync
