#include "loader/image_decoder.h"

#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<cv::Mat> DecodeImageFile(const std::string& path, int channels) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open image ", path));
  }
  const std::streamoff size = in.tellg();
  std::string bytes(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  in.seekg(0);
  if (size < 0 || !in.read(bytes.data(), size)) {
    return absl::DataLossError(absl::StrCat("cannot read image ", path));
  }
  return DecodeImageBytes(bytes, channels, path);
}

absl::StatusOr<cv::Mat> DecodeImageBytes(const std::string& bytes, int channels,
                                         const std::string& path) {
  if (bytes.empty()) {
    return absl::DataLossError(
        absl::StrCat("image ", path, " is empty (0 bytes)"));
  }
  if (channels != 0 && channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 0, 1 or 3 (got ", channels, ")"));
  }
  // libjpeg decodes a truncated JPEG silently (grey tail); PIL refuses it.
  // A JPEG must end with its EOI marker (FF D9), give or take padding.
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
      static_cast<unsigned char>(bytes[1]) == 0xD8) {
    size_t end = bytes.size();
    while (end > 2 && (bytes[end - 1] == '\0' || bytes[end - 1] == '\n')) --end;
    if (end < 4 || static_cast<unsigned char>(bytes[end - 2]) != 0xFF ||
        static_cast<unsigned char>(bytes[end - 1]) != 0xD9) {
      return absl::DataLossError(
          absl::StrCat("image ", path, " is a truncated JPEG (no end marker)"));
    }
  }
  cv::Mat decoded;
  try {
    const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1,
                      const_cast<char*>(bytes.data()));
    const int flags = channels == 1   ? cv::IMREAD_GRAYSCALE
                      : channels == 3 ? cv::IMREAD_COLOR
                                      : cv::IMREAD_ANYCOLOR;
    decoded = cv::imdecode(raw, flags);
    if (decoded.empty()) {
      return absl::DataLossError(absl::StrCat(
          "image ", path, " is corrupt or not a supported image format"));
    }
    if (decoded.depth() != CV_8U) {
      decoded.convertTo(decoded, CV_8U);
    }
    if (decoded.channels() == 4) {
      cv::cvtColor(decoded, decoded, cv::COLOR_BGRA2BGR);
    }
    if (decoded.channels() == 3) {
      cv::cvtColor(decoded, decoded, cv::COLOR_BGR2RGB);
    }
  } catch (const cv::Exception& e) {
    return absl::DataLossError(
        absl::StrCat("image ", path, " could not be decoded: ", e.what()));
  }
  return decoded;
}

}  // namespace gradsync
