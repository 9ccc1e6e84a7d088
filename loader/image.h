// Image: the loader's pixel type, an 8-bit image of `channels` interleaved
// channels (1 grayscale, 3 RGB) in one contiguous row-major buffer (HWC).
// Decoders write into it, transforms read and replace it, ToTensor reads it;
// nothing in the data plane needs OpenCV's cv::Mat for that.
//
// A value type: copies copy the pixels, moves are cheap. Not synchronised:
// one thread owns an Image at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradsync {

struct ImageShape {
  int rows = 0, cols = 0, channels = 0;
  bool operator==(const ImageShape& o) const {
    return rows == o.rows && cols == o.cols && channels == o.channels;
  }
  bool operator!=(const ImageShape& o) const { return !(*this == o); }
};

class Image {
 public:
  Image() = default;
  // All pixels 0. Non-positive sizes give an empty image.
  Image(int rows, int cols, int channels)
      : rows_(rows > 0 && cols > 0 && channels > 0 ? rows : 0),
        cols_(rows_ > 0 ? cols : 0),
        channels_(rows_ > 0 ? channels : 0),
        pixels_(static_cast<size_t>(rows_) * cols_ * channels_) {}
  // All pixels `value`.
  Image(int rows, int cols, int channels, uint8_t value)
      : Image(rows, cols, channels) {
    pixels_.assign(pixels_.size(), value);
  }

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int channels() const { return channels_; }
  ImageShape shape() const { return {rows_, cols_, channels_}; }
  bool empty() const { return pixels_.empty(); }
  // Bytes per row and in all.
  size_t row_bytes() const { return static_cast<size_t>(cols_) * channels_; }
  size_t size_bytes() const { return pixels_.size(); }

  uint8_t* data() { return pixels_.data(); }
  const uint8_t* data() const { return pixels_.data(); }
  // The first byte of row y / of pixel (y, x); no bounds checks.
  uint8_t* row(int y) { return pixels_.data() + y * row_bytes(); }
  const uint8_t* row(int y) const { return pixels_.data() + y * row_bytes(); }
  uint8_t* at(int y, int x) {
    return row(y) + static_cast<size_t>(x) * channels_;
  }
  const uint8_t* at(int y, int x) const {
    return row(y) + static_cast<size_t>(x) * channels_;
  }

  bool operator==(const Image& o) const {
    return shape() == o.shape() && pixels_ == o.pixels_;
  }
  bool operator!=(const Image& o) const { return !(*this == o); }

 private:
  int rows_ = 0, cols_ = 0, channels_ = 0;
  std::vector<uint8_t> pixels_;
};

}  // namespace gradsync
