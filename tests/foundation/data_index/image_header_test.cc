// Declared sizes read from headers without decoding, for every format the
// loader lists; cut-short or unknown data gives none.
#include "foundation/data_index/image_header.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fakes/image_headers.h"

namespace gradsync {
namespace {

std::string Le16(uint16_t v) { return {char(v), char(v >> 8)}; }
std::string Le32(uint32_t v) {
  return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
}

void ExpectSize(const std::string& bytes, int64_t w, int64_t h) {
  const std::optional<DeclaredSize> size = ReadDeclaredSize(bytes);
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->width, w);
  EXPECT_EQ(size->height, h);
}

// The review's bombs: a PNG declaring 30000x30000 and a JPEG declaring
// 60000x60000.
TEST(ImageHeaderTest, PngAndJpeg) {
  ExpectSize(PngHeader(30000, 30000), 30000, 30000);
  ExpectSize(JpegHeader(60000, 60000), 60000, 60000);
  ExpectSize(JpegHeader(28, 28), 28, 28);
  // Progressive (SOF2) counts too.
  std::string progressive = JpegHeader(640, 480);
  progressive[2 + 18 + 1] = '\xC2';
  ExpectSize(progressive, 640, 480);
}

TEST(ImageHeaderTest, BmpPnmWebpTiff) {
  std::string bmp = "BM" + std::string(12, '\0') + Le32(40) + Le32(1000) +
                    Le32(uint32_t(-500));  // top-down
  ExpectSize(bmp, 1000, 500);
  ExpectSize("P5\n# a comment\n 640 480\n255\n", 640, 480);
  ExpectSize("P6 7 9 255 ", 7, 9);
  std::string vp8x = "RIFF" + Le32(30) + "WEBPVP8X" + Le32(10) + Le32(0) +
                     std::string("\x3F\x9C\x00\x0F\x27\x00", 6);
  ExpectSize(vp8x, 40000, 10000);
  // Little-endian TIFF, ImageWidth SHORT, ImageLength LONG.
  std::string tiff = std::string("II*\0", 4) + Le32(8) + Le16(2) + Le16(256) +
                     Le16(3) + Le32(1) + Le16(123) + Le16(0) + Le16(257) +
                     Le16(4) + Le32(1) + Le32(70000);
  ExpectSize(tiff, 123, 70000);
}

TEST(ImageHeaderTest, CutShortOrUnknownGivesNothing) {
  EXPECT_FALSE(ReadDeclaredSize("").has_value());
  EXPECT_FALSE(ReadDeclaredSize("png").has_value());
  EXPECT_FALSE(ReadDeclaredSize(PngHeader(5, 5).substr(0, 20)).has_value());
  EXPECT_FALSE(ReadDeclaredSize(JpegHeader(5, 5).substr(0, 25)).has_value());
  // A JPEG whose scan starts before any frame header.
  EXPECT_FALSE(
      ReadDeclaredSize(std::string("\xFF\xD8\xFF\xDA\x00\x02", 6)).has_value());
  EXPECT_FALSE(ReadDeclaredSize("RIFF").has_value());
  EXPECT_FALSE(
      ReadDeclaredSize(std::string("II*\0\xff\xff\xff\xff", 8)).has_value());
}

}  // namespace
}  // namespace gradsync
