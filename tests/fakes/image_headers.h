// Image headers that declare a size and hold no pixels: what a
// decompression bomb looks like to a decoder before it allocates. For the
// header and decoder-limit tests. Pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace gradsync {

inline std::string Be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// PNG signature and IHDR chunk (8-bit grey), no image data.
inline std::string PngHeader(uint32_t width, uint32_t height) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + Be32(13) + "IHDR" + Be32(width) +
         Be32(height) + std::string("\x08\x00\x00\x00\x00", 5);
}

// JPEG SOI, an APP0 (JFIF) segment and a baseline SOF0 frame header, no
// scan; ends with EOI so it is not refused as truncated first.
inline std::string JpegHeader(uint16_t width, uint16_t height) {
  const std::string app0 = std::string("\xFF\xE0\x00\x10JFIF\x00\x01\x01", 11) +
                           std::string(7, '\0');
  const std::string sof =
      std::string("\xFF\xC0\x00\x11\x08", 5) + char(height >> 8) +
      char(height) + char(width >> 8) + char(width) +
      std::string("\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01", 10);
  return std::string("\xFF\xD8", 2) + app0 + sof + std::string("\xFF\xD9", 2);
}

}  // namespace gradsync
