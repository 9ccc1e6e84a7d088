// Finding: hostile files. A PNG declaring 30000x30000 and a JPEG declaring
// 60000x60000 made a worker allocate gigabytes (TurboJPEG from the header,
// OpenCV up to 2^30 pixels), and a FIFO named x.png hung a loader thread.
// Now sizes are checked from the header before any decoder allocates, only
// regular files are read, and file sizes are capped; errors name the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "loader/image_decoder.h"
#include "tests/fakes/fifo_reader.h"
#include "tests/fakes/image_headers.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("image_limits_", ::getpid());
  fs::create_directories(dir);
  return (dir / name).string();
}

void ExpectRefused(const absl::StatusOr<Image>& image, absl::StatusCode code,
                   const std::string& says) {
  EXPECT_EQ(image.status().code(), code) << image.status();
  EXPECT_NE(image.status().message().find(says), std::string::npos)
      << image.status();
}

TEST(ImageLimitsTest, BombsAreRefusedFromTheirHeaders) {
  ExpectRefused(DecodeImageBytes(PngHeader(30000, 30000), 0, "bomb.png"),
                absl::StatusCode::kResourceExhausted,
                "image bomb.png declares 30000x30000 pixels, more than the "
                "limit of 89478485");
  ExpectRefused(DecodeImageBytes(JpegHeader(60000, 60000), 3, "bomb.jpg"),
                absl::StatusCode::kResourceExhausted,
                "bomb.jpg declares 60000x60000");
  // One side alone can be the bomb; a lower limit is honoured.
  ExpectRefused(DecodeImageBytes(PngHeader(1, 4000000000u), 0, "tall.png"),
                absl::StatusCode::kResourceExhausted, "tall.png");
  DecodeLimits small;
  small.max_pixels = 100;
  ExpectRefused(DecodeImageBytes(JpegHeader(11, 10), 0, "a.jpg", small),
                absl::StatusCode::kResourceExhausted, "limit of 100");
  // Within the limit the header passes to the decoder (which finds no data).
  const absl::StatusOr<Image> tiny =
      DecodeImageBytes(PngHeader(10, 10), 0, "tiny.png", small);
  EXPECT_NE(tiny.status().code(), absl::StatusCode::kResourceExhausted)
      << tiny.status();
}

// Finding (issue 39, 3): a 875 KB BigTIFF declaring 30000x30000 took a
// worker to 4.69 GB, and a PAM named .pgm decoded past the limit: the
// header check knew neither, and OpenCV opens both by content. Only
// formats whose header was checked reach a decoder; the rest are refused
// by name, whatever the file is called.
TEST(ImageLimitsTest, FormatsWithUncheckedHeadersAreRefusedByName) {
  // BigTIFF: "II", 43, offset size 8, then the first IFD at 16 with
  // ImageWidth and ImageLength as LONG8 (type 16) values.
  std::string big_tiff("II+\0\x08\0\0\0", 8);
  auto le = [](uint64_t v, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
    return out;
  };
  big_tiff += le(16, 8) + le(2, 8);
  for (uint16_t tag : {256, 257}) {
    big_tiff += le(tag, 2) + le(16, 2) + le(1, 8) + le(30000, 8);
  }
  big_tiff += le(0, 8) + std::string(1 << 16, '\0');
  const std::pair<std::string, std::string> cases[] = {
      {"bomb.tif", big_tiff},
      {"bomb.pgm",
       "P7\nWIDTH 30000\nHEIGHT 30000\nDEPTH 1\nMAXVAL 255\nTUPLTYPE "
       "GRAYSCALE\nENDHDR\n" +
           std::string(4096, '\0')},
      {"bomb.ppm", "PF\n30000 30000\n-1.0\n" + std::string(4096, '\0')},
      {"bomb.png", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 30000 +X 30000\n"},
      {"picture.jpg", "GIF89a" + std::string(64, '\0')},
  };
  const char* names[] = {"BigTIFF", "PAM (P7)", "PFM", "Radiance HDR", "GIF"};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const std::string path = TempPath(cases[i].first);
    std::ofstream(path, std::ios::binary) << cases[i].second;
    const absl::StatusOr<Image> image = DecodeImageFile(path, 0);
    ExpectRefused(image, absl::StatusCode::kInvalidArgument, path);
    ExpectRefused(image, absl::StatusCode::kInvalidArgument,
                  absl::StrCat("a ", names[i], " file"));
  }
  // Bytes that are no format at all, or a header cut short.
  ExpectRefused(DecodeImageBytes("not an image", 0, "junk.png"),
                absl::StatusCode::kInvalidArgument,
                "junk.png is not an image the loader reads");
  ExpectRefused(DecodeImageBytes(PngHeader(10, 10).substr(0, 20), 0, "cut.png"),
                absl::StatusCode::kInvalidArgument, "cut.png");
}

TEST(ImageLimitsTest, OnlyRegularFilesWithinTheByteLimitAreRead) {
  const std::string fifo = TempPath("x.png");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(
      ReadWithoutWaiting(fifo, [&] { return DecodeImageFile(fifo, 0); }),
      absl::StatusCode::kFailedPrecondition,
      "image " + fifo + " is not a regular file");
  fs::remove(fifo);

  const std::string big = TempPath("big.png");
  std::ofstream(big) << PngHeader(2, 2) << std::string(5000, 'x');
  DecodeLimits limits;
  limits.max_file_bytes = 4096;
  ExpectRefused(DecodeImageFile(big, 0, limits),
                absl::StatusCode::kResourceExhausted,
                absl::StrCat("image ", big, " is ", fs::file_size(big),
                             " bytes, more than the limit of 4096"));
  ExpectRefused(DecodeImageFile(TempPath("missing.png"), 0),
                absl::StatusCode::kNotFound, "missing.png");
  fs::remove_all(fs::path(big).parent_path());
}

}  // namespace
}  // namespace gradsync
