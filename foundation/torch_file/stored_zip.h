// Zip archives without compression: the container torch.save writes
// (PyTorchStreamWriter, every record stored as is). Reads one held in memory
// and writes one, without LibTorch, so the CLI can repackage a snapshot.
//
// Reading treats the bytes as hostile: every offset and length is checked
// against the archive, every record's CRC-32 is verified, and what this
// format never holds (compression, zip64, multi-disk archives) is refused
// by name. Thread-compatible (plain functions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// One member of the archive. `data` points into the archive (reading) or
// into the caller's buffer (writing).
struct ZipRecord {
  std::string name;
  absl::string_view data;
};

// One member as the central directory describes it, stored or compressed:
// `data` is its bytes in the archive as they are (compressed when `method`
// is not 0), `size` what they inflate to, as declared.
struct ZipEntry {
  std::string name;
  uint32_t method = 0;  // 0 stored, 8 deflate, ...
  uint32_t crc = 0;
  uint64_t size = 0;
  absl::string_view data;
};

// The entries of `archive` without inflating or checking any: every offset
// and length checked against the archive, zip64 and multi-disk archives
// refused (INVALID_ARGUMENT). What is in a compressed entry is for the
// caller to bound before inflating it (`size` is only declared).
absl::StatusOr<std::vector<ZipEntry>> ListZipEntries(absl::string_view archive);

// The records of `archive`, in central-directory order. INVALID_ARGUMENT
// naming the problem (and the record, where there is one) when the bytes are
// not a stored zip archive.
absl::StatusOr<std::vector<ZipRecord>> ReadStoredZip(absl::string_view archive);

// A stored zip archive of `records`, each record's data starting on a
// 64-byte boundary as torch.save places them (so torch.load(mmap=True)
// works). INVALID_ARGUMENT when the archive would need zip64 (4 GiB or
// 65,535 records) or a name is empty or longer than 65,535 bytes.
absl::StatusOr<std::string> WriteStoredZip(
    const std::vector<ZipRecord>& records);

// The CRC-32 (IEEE 802.3, the zip checksum) of `bytes`.
uint32_t Crc32(absl::string_view bytes);

}  // namespace gradsync
