// The tar format as WebDataset shards use it (POSIX ustar, as Python's
// tarfile and GNU tar write it): one member's header read from its 512-byte
// block, and members written. Headers are hostile: a checksum that does not
// match, a size that is not an octal number, a name that is absolute or
// climbs out with "..", and link members are INVALID_ARGUMENT naming what
// was found; pax ('x') and GNU long-name ('L') headers give the next
// member's name (and pax its size).
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

inline constexpr int64_t kTarBlock = 512;

struct TarHeader {
  enum class Type {
    kFile,       // '0' or '\0'
    kDirectory,  // '5'
    kLongName,   // 'L': the data is the next member's name
    kPax,        // 'x': the data holds "<len> key=value\n" records
    kGlobalPax,  // 'g': ignored
    kOther,      // FIFOs, devices: skipped
  };
  Type type = Type::kFile;
  std::string name;  // prefix "/" name, as written
  int64_t size = 0;  // data bytes after the header (rounded up to blocks)
};

// True when `block` (kTarBlock bytes) is all zeros: the archive's end.
bool IsZeroBlock(absl::string_view block);

// One header block.
absl::StatusOr<TarHeader> ParseTarHeader(absl::string_view block);

// A pax record set's "path" and "size" (others ignored); INVALID_ARGUMENT
// for records that do not parse.
struct PaxOverrides {
  std::string path;
  int64_t size = -1;  // -1: not given
};
absl::StatusOr<PaxOverrides> ParsePaxRecords(absl::string_view data);

// INVALID_ARGUMENT when `name` is empty, absolute, or has a ".." part.
absl::Status CheckMemberName(absl::string_view name);

// A regular-file member (header, data, padding to a block) for `name`
// (at most 99 bytes) holding `data`, mode 0644, mtime 0.
std::string TarFileMember(absl::string_view name, absl::string_view data);

// The two zero blocks that end an archive.
std::string TarEnd();

}  // namespace gradsync
