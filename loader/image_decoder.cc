#include "loader/image_decoder.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "foundation/data_index/image_header.h"
#include "foundation/files/regular_file.h"
#include "gradsync/config.h"

#if GRADSYNC_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#if GRADSYNC_WITH_TURBOJPEG
#include <turbojpeg.h>

#include <memory>
#endif

namespace gradsync {
namespace {

#if GRADSYNC_WITH_TURBOJPEG
// A baseline or progressive JPEG straight into RGB (or gray) with
// TurboJPEG: the same libjpeg-turbo decode OpenCV runs, without OpenCV's BGR
// order and the swap back. Returns false (nothing decoded) for what it does
// not handle: CMYK, corrupt data, warnings; OpenCV then decodes and reports.
// Never allocates more than `max_pixels` (false with *too_large set).
bool DecodeJpegTurbo(const std::string& bytes, int channels, int64_t max_pixels,
                     Image* out, bool* too_large) {
  struct Closer {
    void operator()(void* h) const { tjDestroy(h); }
  };
  thread_local std::unique_ptr<void, Closer> handle(tjInitDecompress());
  if (handle == nullptr) return false;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, bytes.size(), &width, &height,
                          &subsampling, &colorspace) != 0) {
    return false;
  }
  if (colorspace != TJCS_YCbCr && colorspace != TJCS_RGB &&
      colorspace != TJCS_GRAY) {
    return false;
  }
  if (int64_t{width} * height > max_pixels) {
    *too_large = true;
    return false;
  }
  const bool gray = channels == 1 || (channels == 0 && colorspace == TJCS_GRAY);
  Image image(height, width, gray ? 1 : 3);
  if (image.empty()) return false;
  if (tjDecompress2(handle.get(), data, bytes.size(), image.data(), width,
                    static_cast<int>(image.row_bytes()), height,
                    gray ? TJPF_GRAY : TJPF_RGB, 0) != 0) {
    return false;  // errors and warnings alike: let OpenCV decide
  }
  *out = std::move(image);
  return true;
}
#endif

#if GRADSYNC_WITH_OPENCV
// Any format OpenCV reads, converted to 8-bit gray or RGB.
absl::StatusOr<Image> DecodeOpenCv(const std::string& bytes, int channels,
                                   const std::string& path) {
  try {
    const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1,
                      const_cast<char*>(bytes.data()));
    const int flags = channels == 1   ? cv::IMREAD_GRAYSCALE
                      : channels == 3 ? cv::IMREAD_COLOR
                                      : cv::IMREAD_ANYCOLOR;
    cv::Mat decoded = cv::imdecode(raw, flags);
    if (decoded.empty()) {
      return absl::DataLossError(absl::StrCat(
          "image ", path, " is corrupt or not a supported image format"));
    }
    if (decoded.depth() != CV_8U) decoded.convertTo(decoded, CV_8U);
    if (decoded.channels() == 4) {
      cv::cvtColor(decoded, decoded, cv::COLOR_BGRA2BGR);
    }
    // The last step writes straight into the Image's buffer.
    Image image(decoded.rows, decoded.cols, decoded.channels());
    cv::Mat view(image.rows(), image.cols(), decoded.type(), image.data(),
                 image.row_bytes());
    if (decoded.channels() == 3) {
      cv::cvtColor(decoded, view, cv::COLOR_BGR2RGB);
    } else {
      decoded.copyTo(view);
    }
    return image;
  } catch (const cv::Exception& e) {
    return absl::DataLossError(
        absl::StrCat("image ", path, " could not be decoded: ", e.what()));
  }
}
#endif

}  // namespace

absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels,
                                      const DecodeLimits& limits) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, "image");
  if (!file.ok()) return file.status();
  if (file->size() > limits.max_file_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "image ", path, " is ", file->size(), " bytes, more than the limit of ",
        limits.max_file_bytes, " (--max-image-bytes)"));
  }
  std::string bytes(static_cast<size_t>(file->size()), '\0');
  if (absl::Status s = file->ReadAll(bytes.data()); !s.ok()) return s;
  return DecodeImageBytes(bytes, channels, path, limits);
}

absl::StatusOr<Image> DecodeImageBytes(const std::string& bytes, int channels,
                                       const std::string& path,
                                       const DecodeLimits& limits) {
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
  // Decoders allocate what the header declares: check it first.
  auto too_large = [&](const std::string& declared) {
    return absl::ResourceExhaustedError(
        absl::StrCat("image ", path, " declares ", declared,
                     " pixels, more than the limit of ", limits.max_pixels,
                     " (--max-image-pixels; a decompression bomb?)"));
  };
  // Only formats whose header was read go to a decoder: OpenCV opens
  // others by their content, whatever the file is called, and allocates
  // what they declare.
  const std::optional<DeclaredSize> size = ReadDeclaredSize(bytes);
  if (!size.has_value()) {
    const absl::string_view format = UncheckedFormatName(bytes);
    return absl::InvalidArgumentError(absl::StrCat(
        "image ", path, " is ",
        format.empty() ? "not an image the loader reads"
                       : absl::StrCat("a ", format,
                                      " file, a format the loader does not "
                                      "decode"),
        " (it decodes PNG, JPEG, BMP, PBM/PGM/PPM, WebP and TIFF, after "
        "checking the size their header declares; a cut-short header is "
        "refused too)"));
  }
  if (size->width > limits.max_pixels || size->height > limits.max_pixels ||
      size->width * size->height > limits.max_pixels) {
    return too_large(absl::StrCat(size->width, "x", size->height));
  }
#if GRADSYNC_WITH_TURBOJPEG
  Image decoded;
  bool turbo_too_large = false;
  if (static_cast<unsigned char>(bytes[0]) == 0xFF &&
      DecodeJpegTurbo(bytes, channels, limits.max_pixels, &decoded,
                      &turbo_too_large)) {
    return decoded;
  }
  if (turbo_too_large) return too_large("too many");
#endif
#if GRADSYNC_WITH_OPENCV
  return DecodeOpenCv(bytes, channels, path);
#else
  return absl::UnimplementedError(absl::StrCat(
      "image ", path,
      " cannot be decoded: this build has no OpenCV, so it reads JPEGs only, "
      "and only where built with TurboJPEG (rebuild with "
      "-DGRADSYNC_WITH_OPENCV=ON)"));
#endif
}

}  // namespace gradsync
