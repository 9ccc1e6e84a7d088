// Finding: hostile files. A PNG declaring 30000x30000 and a JPEG declaring
// 60000x60000 made a worker allocate gigabytes (TurboJPEG from the header,
// OpenCV up to 2^30 pixels), and a FIFO named x.png hung a loader thread.
// Now sizes are checked from the header before any decoder allocates, only
// regular files are read, and file sizes are capped; errors name the file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "absl/strings/str_cat.h"
#include "loader/image_decoder.h"
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

TEST(ImageLimitsTest, OnlyRegularFilesWithinTheByteLimitAreRead) {
  const std::string fifo = TempPath("x.png");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto decoded =
      std::async(std::launch::async, [&] { return DecodeImageFile(fifo, 0); });
  if (decoded.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Unblock the reader so the test can end, then fail.
    std::ofstream(fifo) << "x";
    ADD_FAILURE() << "reading a FIFO named x.png blocked";
  }
  ExpectRefused(decoded.get(), absl::StatusCode::kFailedPrecondition,
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
