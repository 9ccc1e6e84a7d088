// A data set split held as one torch.save file (<dir>/<split>.pt): the
// dict {"x": X, "y": Y}, read without LibTorch. X is uint8 or float32 of
// shape [N, ...] (one sample per row), Y int64 class indices [N] or float32
// targets [N, ...]. Written by Python's torch.save, or by LibTorch's
// torch::pickle_save (whose type annotation of the dict is read past). The
// coordinator reads the layout to count samples (touching only the zip
// directory and the pickle); a worker reads it, verifies the two storage
// records' checksums and copies the rows.
//
// The file is hostile: a compressed or zip64 archive, a pickle naming any
// global beyond a weights-only file's (tensor_ref.h), X or Y missing or of
// another dtype, a non-contiguous tensor, differing sample counts, or a
// shape declaring more elements than its storage record holds (a header
// declaring 10^12 elements) are INVALID_ARGUMENT naming the problem; no
// size is trusted before it is checked against the bytes that are there.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// The largest data.pkl read (the dict of two tensors takes ~250 bytes).
inline constexpr size_t kMaxTensorFilePickleBytes = 1 << 20;

struct TensorFileArray {
  absl::string_view dtype;     // "uint8", "float32" or "int64"
  int element_size = 0;        // bytes
  std::vector<int64_t> shape;  // [samples, per-sample dimensions...]
  absl::string_view bytes;     // its elements, row-major, in the archive
  // Its storage record (name, stored bytes, declared CRC-32), to verify.
  std::string record;
  absl::string_view record_data;
  uint32_t record_crc = 0;
};

struct TensorFileLayout {
  int64_t samples = 0;
  TensorFileArray x, y;
};

// The layout of `archive` (the file's bytes); nothing of X or Y is read.
absl::StatusOr<TensorFileLayout> ReadTensorFileLayout(
    absl::string_view archive);

// DATA_LOSS naming the record when X's or Y's storage record does not
// match its CRC-32 (reads every byte of both).
absl::Status VerifyTensorFileData(const TensorFileLayout& layout);

}  // namespace gradsync
