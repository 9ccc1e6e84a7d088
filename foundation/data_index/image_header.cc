#include "foundation/data_index/image_header.h"

#include <cctype>
#include <cstdlib>

#include "absl/strings/match.h"

namespace gradsync {
namespace {

// Unsigned integers at `at`, big or little endian; false past the end.
bool Be(absl::string_view b, size_t at, int n, uint64_t* out) {
  if (at + n > b.size()) return false;
  *out = 0;
  for (int i = 0; i < n; ++i) *out = (*out << 8) | uint8_t(b[at + i]);
  return true;
}
bool Le(absl::string_view b, size_t at, int n, uint64_t* out) {
  if (at + n > b.size()) return false;
  *out = 0;
  for (int i = n - 1; i >= 0; --i) *out = (*out << 8) | uint8_t(b[at + i]);
  return true;
}

std::optional<DeclaredSize> Png(absl::string_view b) {
  uint64_t w, h;
  if (b.size() < 24 || b.substr(12, 4) != "IHDR" || !Be(b, 16, 4, &w) ||
      !Be(b, 20, 4, &h)) {
    return std::nullopt;
  }
  return DeclaredSize{int64_t(w), int64_t(h)};
}

// Walks the marker segments to the first start-of-frame (SOF0..SOF15 but
// DHT C4, JPG C8 and DAC CC), which holds the frame's height and width.
std::optional<DeclaredSize> Jpeg(absl::string_view b) {
  size_t pos = 2;
  while (pos + 1 < b.size()) {
    if (uint8_t(b[pos]) != 0xFF) return std::nullopt;
    while (pos < b.size() && uint8_t(b[pos]) == 0xFF) ++pos;  // fill bytes
    if (pos >= b.size()) return std::nullopt;
    const uint8_t marker = uint8_t(b[pos++]);
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // no frame
    uint64_t length;
    if (!Be(b, pos, 2, &length) || length < 2) return std::nullopt;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
        marker != 0xCC) {
      uint64_t h, w;
      if (!Be(b, pos + 3, 2, &h) || !Be(b, pos + 5, 2, &w)) {
        return std::nullopt;
      }
      return DeclaredSize{int64_t(w), int64_t(h)};
    }
    pos += length;
  }
  return std::nullopt;
}

std::optional<DeclaredSize> Bmp(absl::string_view b) {
  uint64_t header, w, h;
  if (!Le(b, 14, 4, &header)) return std::nullopt;
  if (header == 12) {  // BITMAPCOREHEADER: 16-bit sizes
    if (!Le(b, 18, 2, &w) || !Le(b, 20, 2, &h)) return std::nullopt;
    return DeclaredSize{int64_t(w), int64_t(h)};
  }
  if (!Le(b, 18, 4, &w) || !Le(b, 22, 4, &h)) return std::nullopt;
  // Signed: a negative height is a top-down bitmap.
  const int64_t width = int32_t(uint32_t(w)), height = int32_t(uint32_t(h));
  return DeclaredSize{std::llabs(width), std::llabs(height)};
}

// "P1".."P6", then width and height as decimal tokens, with comments.
std::optional<DeclaredSize> Pnm(absl::string_view b) {
  size_t pos = 2;
  int64_t values[2];
  for (int64_t& v : values) {
    while (pos < b.size()) {
      if (b[pos] == '#') {
        while (pos < b.size() && b[pos] != '\n') ++pos;
      } else if (std::isspace(uint8_t(b[pos]))) {
        ++pos;
      } else {
        break;
      }
    }
    if (pos >= b.size() || !std::isdigit(uint8_t(b[pos]))) return std::nullopt;
    v = 0;
    for (; pos < b.size() && std::isdigit(uint8_t(b[pos])); ++pos) {
      if (v > (int64_t(1) << 40)) return DeclaredSize{v, v};  // absurd
      v = v * 10 + (b[pos] - '0');
    }
  }
  return DeclaredSize{values[0], values[1]};
}

std::optional<DeclaredSize> WebP(absl::string_view b) {
  if (b.size() < 16) return std::nullopt;
  const absl::string_view chunk = b.substr(12, 4);
  uint64_t w, h;
  if (chunk == "VP8 ") {  // lossy: after the 3-byte tag and 9d 01 2a
    if (!Le(b, 26, 2, &w) || !Le(b, 28, 2, &h)) return std::nullopt;
    return DeclaredSize{int64_t(w & 0x3FFF), int64_t(h & 0x3FFF)};
  }
  if (chunk == "VP8L") {  // lossless: 0x2f, then 14 bits each, minus one
    uint64_t bits;
    if (!Le(b, 21, 4, &bits)) return std::nullopt;
    return DeclaredSize{int64_t((bits & 0x3FFF) + 1),
                        int64_t(((bits >> 14) & 0x3FFF) + 1)};
  }
  if (chunk == "VP8X") {  // extended: 24-bit canvas sizes, minus one
    if (!Le(b, 24, 3, &w) || !Le(b, 27, 3, &h)) return std::nullopt;
    return DeclaredSize{int64_t(w + 1), int64_t(h + 1)};
  }
  return std::nullopt;
}

// The first IFD's ImageWidth (256) and ImageLength (257) tags.
std::optional<DeclaredSize> Tiff(absl::string_view b) {
  const bool big = b[0] == 'M';
  auto read = [&](size_t at, int n, uint64_t* out) {
    return big ? Be(b, at, n, out) : Le(b, at, n, out);
  };
  uint64_t ifd, count;
  if (!read(4, 4, &ifd) || !read(ifd, 2, &count)) return std::nullopt;
  int64_t size[2] = {-1, -1};
  for (uint64_t i = 0; i < count; ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    uint64_t tag, type, value;
    if (!read(entry, 2, &tag) || !read(entry + 2, 2, &type)) {
      return std::nullopt;
    }
    if (tag != 256 && tag != 257) continue;
    // SHORT (3) values sit in the first two bytes of the field, LONG (4) in
    // all four.
    if (!read(entry + 8, type == 3 ? 2 : 4, &value)) return std::nullopt;
    size[tag - 256] = int64_t(value);
  }
  if (size[0] < 0 || size[1] < 0) return std::nullopt;
  return DeclaredSize{size[0], size[1]};
}

}  // namespace

std::optional<DeclaredSize> ReadDeclaredSize(absl::string_view bytes) {
  if (absl::StartsWith(bytes, "\x89PNG\r\n\x1a\n")) return Png(bytes);
  if (absl::StartsWith(bytes, "\xFF\xD8")) return Jpeg(bytes);
  if (absl::StartsWith(bytes, "BM")) return Bmp(bytes);
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' &&
      bytes[1] <= '6') {
    return Pnm(bytes);
  }
  if (bytes.size() >= 16 && absl::StartsWith(bytes, "RIFF") &&
      bytes.substr(8, 4) == "WEBP") {
    return WebP(bytes);
  }
  if (absl::StartsWith(bytes, absl::string_view("II*\0", 4)) ||
      absl::StartsWith(bytes, absl::string_view("MM\0*", 4))) {
    return Tiff(bytes);
  }
  return std::nullopt;
}

absl::string_view UncheckedFormatName(absl::string_view bytes) {
  struct Signature {
    absl::string_view magic;
    absl::string_view name;
  };
  static constexpr Signature kSignatures[] = {
      {absl::string_view("II+\0", 4), "BigTIFF"},
      {absl::string_view("MM\0+", 4), "BigTIFF"},
      {"P7", "PAM (P7)"},
      {"PF", "PFM"},
      {"Pf", "PFM"},
      {"#?RADIANCE", "Radiance HDR"},
      {"#?RGBE", "Radiance HDR"},
      {"\x76\x2f\x31\x01", "OpenEXR"},
      {absl::string_view("\0\0\0\x0cjP  ", 8), "JPEG 2000"},
      {"\xff\x4f\xff\x51", "JPEG 2000"},
      {"\x59\xa6\x6a\x95", "Sun raster"},
      {"GIF8", "GIF"},
  };
  for (const Signature& s : kSignatures) {
    if (absl::StartsWith(bytes, s.magic)) return s.name;
  }
  return "";
}

}  // namespace gradsync
