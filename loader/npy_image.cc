#include "loader/npy_image.h"

#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gradsync {
namespace {

constexpr size_t kMaxHeaderBytes = 4096;

// The value after 'key': in the header dict, up to the next ',' at depth 0
// (or the closing '}'), stripped.
absl::string_view DictValue(absl::string_view header, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "':");
  size_t at = header.find(quoted);
  if (at == absl::string_view::npos) return {};
  at += quoted.size();
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
  }
  return absl::StripAsciiWhitespace(header.substr(at, end - at));
}

}  // namespace

absl::StatusOr<Image> DecodeNpyImage(const std::string& bytes, int channels,
                                     const std::string& name,
                                     const DecodeLimits& limits) {
  auto bad = [&name](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return bad("not an .npy file");
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 static_cast<unsigned char>(bytes[9]) << 8;
    header_at = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int i = 3; i >= 0; --i) {
      header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    }
    header_at = 12;
  } else {
    return bad(absl::StrCat(".npy version ", major, " is not read"));
  }
  if (header_len > kMaxHeaderBytes || header_at + header_len > bytes.size()) {
    return bad("its .npy header is cut short or too long");
  }
  const absl::string_view header(bytes.data() + header_at, header_len);
  const absl::string_view descr = DictValue(header, "descr");
  if (descr != "'|u1'" && descr != "'<u1'" && descr != "'u1'") {
    return bad(absl::StrCat("an .npy image holds uint8 ('|u1'), not ",
                            descr.empty() ? "an unnamed dtype" : descr));
  }
  if (DictValue(header, "fortran_order") != "False") {
    return bad("an .npy image is stored in C order (fortran_order False)");
  }
  absl::string_view shape_text = DictValue(header, "shape");
  if (!absl::ConsumePrefix(&shape_text, "(") ||
      !absl::ConsumeSuffix(&shape_text, ")")) {
    return bad("its .npy shape does not parse");
  }
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(shape_text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 1 || d > (int64_t{1} << 20)) {
      return bad(absl::StrCat("its .npy shape (", shape_text,
                              ") has a dimension that is not 1..2^20"));
    }
    shape.push_back(d);
  }
  if (shape.size() == 2) shape.push_back(1);
  if (shape.size() != 3 || (shape[2] != 1 && shape[2] != 3)) {
    return bad(
        absl::StrCat("an .npy image is (H, W) or (H, W, C) with C 1 "
                     "or 3, not (",
                     shape_text, ")"));
  }
  if (shape[0] * shape[1] > limits.max_pixels) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name, ": ", shape[0], "x", shape[1], " pixels, more than the ",
        limits.max_pixels, " an image may have"));
  }
  const size_t data_at = header_at + header_len;
  const auto expected = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
  if (bytes.size() - data_at != expected) {
    return bad(absl::StrCat("its .npy data holds ", bytes.size() - data_at,
                            " bytes, its shape ", expected));
  }
  if (channels != 0 && channels != shape[2]) {
    return bad(absl::StrCat("channels ", channels,
                            " asked; an .npy image is "
                            "used as stored (",
                            shape[2], " channels)"));
  }
  Image image(static_cast<int>(shape[0]), static_cast<int>(shape[1]),
              static_cast<int>(shape[2]));
  std::memcpy(image.data(), bytes.data() + data_at, expected);
  return image;
}

}  // namespace gradsync
