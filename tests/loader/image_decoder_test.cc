#include "loader/image_decoder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace gradsync {
namespace {
namespace fs = std::filesystem;

// An OpenCV view of a decoded image, to compare with OpenCV's own decode.
cv::Mat View(const Image& image) {
  return cv::Mat(image.rows(), image.cols(), CV_8UC(image.channels()),
                 const_cast<uint8_t*>(image.data()), image.row_bytes());
}

class DecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradsync_dec_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return (dir_ / name).string();
  }
  std::string Encode(const std::string& ext, const cv::Mat& bgr) {
    std::vector<uchar> buf;
    cv::imencode(ext, bgr, buf);
    return std::string(buf.begin(), buf.end());
  }
  fs::path dir_;
};

TEST_F(DecoderTest, PngRoundTripInRgbOrder) {
  cv::Mat bgr(4, 4, CV_8UC3, cv::Scalar(10, 20, 30));  // B=10, G=20, R=30
  const std::string path = Write("a.png", Encode(".png", bgr));
  auto rgb = DecodeImageFile(path, 3);
  ASSERT_TRUE(rgb.ok()) << rgb.status();
  EXPECT_EQ(View(*rgb).at<cv::Vec3b>(0, 0), cv::Vec3b(30, 20, 10));
  auto gray = DecodeImageFile(path, 1);
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(gray->channels(), 1);
  auto as_stored = DecodeImageFile(path, 0);
  EXPECT_EQ(as_stored->channels(), 3);
}

// JPEGs (colour and grey, baseline and progressive) decode to exactly OpenCV's
// pixels, whichever decoder the build uses.
TEST_F(DecoderTest, JpegPixelsEqualOpenCvs) {
  cv::Mat bgr(37, 53, CV_8UC3);
  cv::randu(bgr, 0, 256);
  cv::Mat grey;
  cv::cvtColor(bgr, grey, cv::COLOR_BGR2GRAY);
  for (int progressive : {0, 1}) {
    for (const cv::Mat& source : {bgr, grey}) {
      std::vector<uchar> buf;
      cv::imencode(".jpg", source, buf,
                   {cv::IMWRITE_JPEG_QUALITY, 85, cv::IMWRITE_JPEG_PROGRESSIVE,
                    progressive});
      const std::string bytes(buf.begin(), buf.end());
      for (int channels : {0, 1, 3}) {
        SCOPED_TRACE(::testing::Message()
                     << "source channels " << source.channels() << ", decode "
                     << channels << ", progressive " << progressive);
        cv::Mat expected =
            cv::imdecode(buf, channels == 1   ? cv::IMREAD_GRAYSCALE
                              : channels == 3 ? cv::IMREAD_COLOR
                                              : cv::IMREAD_ANYCOLOR);
        if (expected.channels() == 3) {
          cv::cvtColor(expected, expected, cv::COLOR_BGR2RGB);
        }
        auto got = DecodeImageBytes(bytes, channels, "x.jpg");
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->channels(), expected.channels());
        ASSERT_EQ(View(*got).size(), expected.size());
        EXPECT_EQ(cv::norm(View(*got), expected, cv::NORM_INF), 0);
      }
    }
  }
}

TEST_F(DecoderTest, CorruptFilesAreReportedByPath) {
  cv::Mat bgr(32, 32, CV_8UC3, cv::Scalar(1, 2, 3));
  const std::string jpeg = Encode(".jpg", bgr);
  const std::string png = Encode(".png", bgr);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty.png", ""},
      {"garbage.jpg", "this is not an image at all"},
      {"truncated.jpg", jpeg.substr(0, jpeg.size() / 2)},
      {"truncated.png", png.substr(0, png.size() / 2)},
  };
  for (const auto& [name, bytes] : cases) {
    const std::string path = Write(name, bytes);
    auto image = DecodeImageFile(path, 0);
    EXPECT_FALSE(image.ok()) << name;
    EXPECT_NE(image.status().message().find(path), std::string::npos)
        << image.status();
  }
  auto missing = DecodeImageFile((dir_ / "missing.png").string(), 0);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.png"), std::string::npos);
}

}  // namespace
}  // namespace gradsync
