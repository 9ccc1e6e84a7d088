#include "foundation/torch_file/stored_zip.h"

#include <array>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kMaxComment = 0xFFFF;
constexpr size_t kAlignment = 64;
// The extra field that pads a local header so data lands aligned ("FB", as
// torch.save names it).
constexpr uint16_t kPaddingFieldId = 0x4246;

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

uint32_t Le(absl::string_view bytes, size_t at, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return value;
}

void PutLe(std::string& out, uint32_t value, int width) {
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<char>(value >> (8 * i)));
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("not a stored zip archive: ", what));
}

// Where the end-of-central-directory record starts: the last signature
// within a comment's reach of the end.
absl::StatusOr<size_t> FindEnd(absl::string_view archive) {
  if (archive.size() < kEndSize) return Bad("shorter than its end record");
  const size_t last = archive.size() - kEndSize;
  const size_t first = last > kMaxComment ? last - kMaxComment : 0;
  for (size_t at = last + 1; at-- > first;) {
    if (Le(archive, at, 4) == kEndOfCentralDirectory &&
        at + kEndSize + Le(archive, at + 20, 2) == archive.size()) {
      return at;
    }
  }
  return Bad("no end-of-central-directory record");
}

}  // namespace

uint32_t Crc32(absl::string_view bytes) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = kTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

absl::StatusOr<std::vector<ZipEntry>> ListZipEntries(
    absl::string_view archive) {
  absl::StatusOr<size_t> end = FindEnd(archive);
  if (!end.ok()) return end.status();
  const uint32_t disk = Le(archive, *end + 4, 2);
  const uint32_t directory_disk = Le(archive, *end + 6, 2);
  const uint32_t entries_here = Le(archive, *end + 8, 2);
  const uint32_t entries = Le(archive, *end + 10, 2);
  const uint32_t directory_size = Le(archive, *end + 12, 4);
  const uint32_t directory_at = Le(archive, *end + 16, 4);
  if (entries == 0xFFFF || directory_at == 0xFFFFFFFFu ||
      directory_size == 0xFFFFFFFFu) {
    return Bad("zip64 archives are not supported");
  }
  if (disk != 0 || directory_disk != 0 || entries_here != entries) {
    return Bad("multi-disk archives are not supported");
  }
  if (uint64_t{directory_at} + directory_size > *end) {
    return Bad("central directory runs past its end record");
  }
  std::vector<ZipEntry> list;
  list.reserve(entries);
  size_t at = directory_at;
  const size_t directory_end = directory_at + directory_size;
  for (uint32_t i = 0; i < entries; ++i) {
    if (at + kCentralHeaderSize > directory_end ||
        Le(archive, at, 4) != kCentralHeader) {
      return Bad(absl::StrCat("central directory entry ", i, " is damaged"));
    }
    ZipEntry entry;
    entry.method = Le(archive, at + 10, 2);
    entry.crc = Le(archive, at + 16, 4);
    const uint32_t compressed = Le(archive, at + 20, 4);
    entry.size = Le(archive, at + 24, 4);
    const size_t name_length = Le(archive, at + 28, 2);
    const size_t extra_length = Le(archive, at + 30, 2);
    const size_t comment_length = Le(archive, at + 32, 2);
    const uint32_t local_at = Le(archive, at + 42, 4);
    const size_t next =
        at + kCentralHeaderSize + name_length + extra_length + comment_length;
    if (next > directory_end) {
      return Bad(absl::StrCat("central directory entry ", i, " is damaged"));
    }
    entry.name =
        std::string(archive.substr(at + kCentralHeaderSize, name_length));
    const std::string& name = entry.name;
    if (compressed == 0xFFFFFFFFu || entry.size == 0xFFFFFFFFu ||
        local_at == 0xFFFFFFFFu) {
      return Bad(absl::StrCat(name, ": zip64 sizes are not supported"));
    }
    if (uint64_t{local_at} + kLocalHeaderSize > directory_at ||
        Le(archive, local_at, 4) != kLocalHeader) {
      return Bad(absl::StrCat(name, ": local header missing"));
    }
    const uint64_t data_at = uint64_t{local_at} + kLocalHeaderSize +
                             Le(archive, local_at + 26, 2) +
                             Le(archive, local_at + 28, 2);
    if (data_at + compressed > directory_at) {
      return Bad(absl::StrCat(name, ": data runs past the archive"));
    }
    entry.data = archive.substr(data_at, compressed);
    list.push_back(std::move(entry));
    at = next;
  }
  return list;
}

absl::StatusOr<std::vector<ZipRecord>> ReadStoredZip(
    absl::string_view archive) {
  absl::StatusOr<std::vector<ZipEntry>> list = ListZipEntries(archive);
  if (!list.ok()) return list.status();
  std::vector<ZipRecord> records;
  records.reserve(list->size());
  for (ZipEntry& entry : *list) {
    if (entry.method != 0) {
      return Bad(absl::StrCat(entry.name, " is compressed (method ",
                              entry.method,
                              "); torch.save stores records as is"));
    }
    if (entry.data.size() != entry.size) {
      return Bad(absl::StrCat(entry.name, ": inconsistent sizes"));
    }
    if (Crc32(entry.data) != entry.crc) {
      return Bad(
          absl::StrCat(entry.name, ": CRC-32 mismatch (damaged record)"));
    }
    records.push_back({std::move(entry.name), entry.data});
  }
  return records;
}

absl::StatusOr<std::string> WriteStoredZip(
    const std::vector<ZipRecord>& records) {
  constexpr uint64_t kMaxOffset = std::numeric_limits<uint32_t>::max() - 1;
  if (records.size() >= 0xFFFF) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a stored zip archive holds at most 65,534 records here (got ",
        records.size(), ")"));
  }
  std::string out;
  std::string directory;
  for (const ZipRecord& record : records) {
    if (record.name.empty() || record.name.size() > 0xFFFF) {
      return absl::InvalidArgumentError(
          absl::StrCat("zip record name must be 1 to 65,535 bytes (got ",
                       record.name.size(), ")"));
    }
    const uint64_t local_at = out.size();
    size_t pad =
        (kAlignment -
         (local_at + kLocalHeaderSize + record.name.size()) % kAlignment) %
        kAlignment;
    if (pad != 0 && pad < 4) pad += kAlignment;  // room for the field header
    if (local_at + kLocalHeaderSize + record.name.size() + pad +
            record.data.size() >
        kMaxOffset) {
      return absl::InvalidArgumentError(
          "the archive would pass 4 GiB, which needs zip64");
    }
    const uint32_t crc = Crc32(record.data);
    const uint32_t size = static_cast<uint32_t>(record.data.size());
    // Local header: version 2.0, no flags, stored, no timestamp.
    PutLe(out, kLocalHeader, 4);
    PutLe(out, 20, 2);
    PutLe(out, 0, 2);
    PutLe(out, 0, 2);
    PutLe(out, 0, 4);
    PutLe(out, crc, 4);
    PutLe(out, size, 4);
    PutLe(out, size, 4);
    PutLe(out, static_cast<uint32_t>(record.name.size()), 2);
    PutLe(out, static_cast<uint32_t>(pad), 2);
    out += record.name;
    if (pad != 0) {
      PutLe(out, kPaddingFieldId, 2);
      PutLe(out, static_cast<uint32_t>(pad - 4), 2);
      out.append(pad - 4, '\0');
    }
    out.append(record.data.data(), record.data.size());
    // Its central directory entry.
    PutLe(directory, kCentralHeader, 4);
    PutLe(directory, 20, 2);
    PutLe(directory, 20, 2);
    PutLe(directory, 0, 2);
    PutLe(directory, 0, 2);
    PutLe(directory, 0, 4);
    PutLe(directory, crc, 4);
    PutLe(directory, size, 4);
    PutLe(directory, size, 4);
    PutLe(directory, static_cast<uint32_t>(record.name.size()), 2);
    PutLe(directory, 0, 2);  // extra
    PutLe(directory, 0, 2);  // comment
    PutLe(directory, 0, 2);  // disk
    PutLe(directory, 0, 2);  // internal attributes
    PutLe(directory, 0, 4);  // external attributes
    PutLe(directory, static_cast<uint32_t>(local_at), 4);
    directory += record.name;
  }
  if (out.size() + directory.size() + kEndSize > kMaxOffset) {
    return absl::InvalidArgumentError(
        "the archive would pass 4 GiB, which needs zip64");
  }
  const uint32_t directory_at = static_cast<uint32_t>(out.size());
  out += directory;
  PutLe(out, kEndOfCentralDirectory, 4);
  PutLe(out, 0, 2);
  PutLe(out, 0, 2);
  PutLe(out, static_cast<uint32_t>(records.size()), 2);
  PutLe(out, static_cast<uint32_t>(records.size()), 2);
  PutLe(out, static_cast<uint32_t>(directory.size()), 4);
  PutLe(out, directory_at, 4);
  PutLe(out, 0, 2);  // comment
  return out;
}

}  // namespace gradsync
