#include "loader/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gradsync {

std::array<double, 6> InverseAffineMatrix(double cx, double cy,
                                          const AffineParams& p) {
  // Inverse of T(t) * C * R(angle) * S(scale) * C^-1 (no shear).
  const double rot = p.angle * M_PI / 180.0;
  const double a = std::cos(rot), b = -std::sin(rot);
  const double c = std::sin(rot), d = std::cos(rot);
  std::array<double, 6> m = {d / p.scale,  -b / p.scale, 0.0,
                             -c / p.scale, a / p.scale,  0.0};
  const double tx = p.translate_x, ty = p.translate_y;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

namespace {

// PIL's coordinate truncation: towards zero, but any negative is outside.
inline int Coord(double v) { return v < 0 ? -1 : static_cast<int>(v); }

// 16.16 fixed point, rounded half up, as PIL's fast affine path.
inline int64_t Fix(double v) {
  return static_cast<int64_t>(std::floor(v * 65536.0 + 0.5));
}

inline int64_t FloorDiv(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Narrows [*lo, *hi) to the x with 0 <= c + d * x < limit (integers).
inline void KeepInside(int64_t c, int64_t d, int64_t limit, int64_t* lo,
                       int64_t* hi) {
  if (d == 0) {
    if (c < 0 || c >= limit) *hi = *lo;
    return;
  }
  if (d > 0) {
    *lo = std::max(*lo, -FloorDiv(c, d));          // ceil(-c / d)
    *hi = std::min(*hi, -FloorDiv(c - limit, d));  // ceil((limit-c)/d)
  } else {
    *lo = std::max(*lo, FloorDiv(c - limit, -d) + 1);
    *hi = std::min(*hi, FloorDiv(c, -d) + 1);
  }
}

// Calls inside(x, y, src) for every output pixel that samples input pixel
// src and outside(x, y) for every one that falls outside the input.
// Pillow's Image.transform(AFFINE, NEAREST), which torchvision calls for PIL
// images, samples output pixel centres (x + 0.5, y + 0.5) through one of
// three paths; each is reproduced so the outputs agree pixel for pixel. The
// fixed-point path (every rotation on images under 32K pixels) computes per
// row the x interval that lands inside, so its inner loop has no bounds
// checks.
template <typename Inside, typename Outside>
void ForEachAffineSample(const Image& image, const AffineParams& p,
                         Inside&& inside, Outside&& outside) {
  const int h = image.rows(), w = image.cols();
  const std::array<double, 6> m = InverseAffineMatrix(w * 0.5, h * 0.5, p);
  auto sample = [&](int x, int y, int ix, int iy) {
    if (ix < 0 || ix >= w || iy < 0 || iy >= h) {
      outside(x, y);
    } else {
      inside(x, y, image.at(iy, ix));
    }
  };
  if (m[1] == 0 && m[3] == 0) {
    // Pure scaling: double-precision accumulation per axis.
    std::vector<int> xin(w);
    double xo = m[2] + m[0] * 0.5;
    for (int x = 0; x < w; ++x, xo += m[0]) xin[x] = Coord(xo);
    double yo = m[5] + m[4] * 0.5;
    for (int y = 0; y < h; ++y, yo += m[4]) {
      const int iy = Coord(yo);
      for (int x = 0; x < w; ++x) sample(x, y, xin[x], iy);
    }
    return;
  }
  auto fits_fixed = [&](int sx, int sy) {
    return std::fabs(sx * m[0] + sy * m[1] + m[2]) < 32768.0 &&
           std::fabs(sx * m[3] + sy * m[4] + m[5]) < 32768.0;
  };
  if (fits_fixed(w, h)) {
    const int64_t a0 = Fix(m[0]), a1 = Fix(m[1]), a3 = Fix(m[3]),
                  a4 = Fix(m[4]);
    int64_t a2 = Fix(m[2] + m[0] * 0.5 + m[1] * 0.5);
    int64_t a5 = Fix(m[5] + m[3] * 0.5 + m[4] * 0.5);
    // Input pixel (floor(xx / 2^16), floor(yy / 2^16)) is inside iff
    // 0 <= xx < w * 2^16 and 0 <= yy < h * 2^16.
    const int64_t w16 = static_cast<int64_t>(w) << 16;
    const int64_t h16 = static_cast<int64_t>(h) << 16;
    for (int y = 0; y < h; ++y, a2 += a1, a5 += a4) {
      int64_t lo = 0, hi = w;
      KeepInside(a2, a0, w16, &lo, &hi);
      KeepInside(a5, a3, h16, &lo, &hi);
      if (lo >= hi) lo = hi = w;
      int x = 0;
      for (; x < lo; ++x) outside(x, y);
      int64_t xx = a2 + lo * a0, yy = a5 + lo * a3;
      for (; x < hi; ++x, xx += a0, yy += a3) {
        inside(x, y,
               image.at(static_cast<int>(yy >> 16), static_cast<int>(xx >> 16)));
      }
      for (; x < w; ++x) outside(x, y);
    }
    return;
  }
  double xo = m[2] + m[0] * 0.5 + m[1] * 0.5;
  double yo = m[5] + m[3] * 0.5 + m[4] * 0.5;
  for (int y = 0; y < h; ++y, xo += m[1], yo += m[4]) {
    double xx = xo, yy = yo;
    for (int x = 0; x < w; ++x, xx += m[0], yy += m[3]) {
      sample(x, y, Coord(xx), Coord(yy));
    }
  }
}

// Per-channel ToTensor/Normalize as value * scale + offset.
struct TensorScale {
  float scale[4], offset[4];
  TensorScale(int channels, const std::vector<float>& mean,
              const std::vector<float>& std) {
    for (int c = 0; c < channels; ++c) {
      const float inv_std = std.empty() ? 1.f : 1.f / std[c];
      scale[c] = inv_std / 255.f;
      offset[c] = mean.empty() ? 0.f : -mean[c] * inv_std;
    }
  }
};

}  // namespace

Image AffineNearest(const Image& image, const AffineParams& p) {
  Image out(image.rows(), image.cols(), image.channels());
  const size_t pixel = image.channels();
  ForEachAffineSample(
      image, p,
      [&](int x, int y, const uint8_t* src) {
        std::memcpy(out.at(y, x), src, pixel);
      },
      [](int, int) {});
  return out;
}

namespace {

// The fused warp for a compile-time channel count: a 256-entry lookup table
// per channel replaces the int-to-float conversion and multiply-add.
template <int C>
void AffineToTensorImpl(const Image& image, const AffineParams& p,
                        const TensorScale& t, float* out) {
  const int w = image.cols();
  const size_t plane = static_cast<size_t>(image.rows()) * w;
  float lut[C][256];
  for (int ch = 0; ch < C; ++ch) {
    for (int v = 0; v < 256; ++v) lut[ch][v] = v * t.scale[ch] + t.offset[ch];
  }
  ForEachAffineSample(
      image, p,
      [&](int x, int y, const uint8_t* src) {
        float* dst = out + static_cast<size_t>(y) * w + x;
        for (int ch = 0; ch < C; ++ch) dst[ch * plane] = lut[ch][src[ch]];
      },
      [&](int x, int y) {
        float* dst = out + static_cast<size_t>(y) * w + x;
        for (int ch = 0; ch < C; ++ch) dst[ch * plane] = lut[ch][0];
      });
}

}  // namespace

void AffineNearestToTensor(const Image& image, const AffineParams& p,
                           const std::vector<float>& mean,
                           const std::vector<float>& std, float* out) {
  const TensorScale t(image.channels(), mean, std);
  switch (image.channels()) {
    case 1:
      return AffineToTensorImpl<1>(image, p, t, out);
    case 3:
      return AffineToTensorImpl<3>(image, p, t, out);
    default: {
      const int c = image.channels(), w = image.cols();
      const size_t plane = static_cast<size_t>(image.rows()) * w;
      ForEachAffineSample(
          image, p,
          [&](int x, int y, const uint8_t* src) {
            float* dst = out + static_cast<size_t>(y) * w + x;
            for (int ch = 0; ch < c; ++ch, dst += plane) {
              *dst = src[ch] * t.scale[ch] + t.offset[ch];
            }
          },
          [&](int x, int y) {
            float* dst = out + static_cast<size_t>(y) * w + x;
            for (int ch = 0; ch < c; ++ch, dst += plane) *dst = t.offset[ch];
          });
    }
  }
}

AffineParams RandomAffine::SampleParams(SampleRng& rng, int width,
                                        int height) const {
  AffineParams p;
  p.angle = rng.Uniform(-degrees_, degrees_);
  const double max_dx = translate_x_ * width, max_dy = translate_y_ * height;
  // Python's round() rounds half to even, as nearbyint does by default.
  p.translate_x =
      static_cast<int>(std::nearbyint(rng.Uniform(-max_dx, max_dx)));
  p.translate_y =
      static_cast<int>(std::nearbyint(rng.Uniform(-max_dy, max_dy)));
  p.scale = rng.Uniform(scale_min_, scale_max_);
  return p;
}

std::string RandomAffine::Describe() const {
  return absl::StrFormat(
      "RandomAffine(degrees=%g, translate=(%g, %g), "
      "scale=(%g, %g))",
      degrees_, translate_x_, translate_y_, scale_min_, scale_max_);
}

absl::Status RandomAffine::Apply(Image& image, SampleRng& rng) const {
  image = AffineNearest(image, SampleParams(rng, image.cols(), image.rows()));
  return absl::OkStatus();
}

absl::Status RandomAffine::ApplyToTensor(Image& image, SampleRng& rng,
                                         const std::vector<float>& mean,
                                         const std::vector<float>& std,
                                         float* out) const {
  AffineNearestToTensor(image, SampleParams(rng, image.cols(), image.rows()), mean,
                        std, out);
  return absl::OkStatus();
}

std::string RandomCrop::Describe() const {
  return absl::StrFormat("RandomCrop(size=(%d, %d), padding=%d)", height_,
                         width_, padding_);
}

absl::Status RandomCrop::Apply(Image& image, SampleRng& rng) const {
  // Crops the zero-padded image without building it: padded pixel (y, x) is
  // image pixel (y - padding, x - padding), or 0 outside the image.
  const int padded_rows = image.rows() + 2 * padding_;
  const int padded_cols = image.cols() + 2 * padding_;
  if (padded_rows < height_ || padded_cols < width_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "RandomCrop: crop %dx%d is larger than the padded image %dx%d", height_,
        width_, padded_rows, padded_cols));
  }
  const int top = static_cast<int>(rng.UniformInt(0, padded_rows - height_));
  const int left = static_cast<int>(rng.UniformInt(0, padded_cols - width_));
  Image out(height_, width_, image.channels());
  // The output columns [x0, x1) that fall inside the image.
  const int x0 = std::max(0, padding_ - left);
  const int x1 = std::min(width_, image.cols() + padding_ - left);
  for (int y = 0; y < height_; ++y) {
    const int iy = y + top - padding_;
    if (iy < 0 || iy >= image.rows() || x0 >= x1) continue;
    std::memcpy(out.at(y, x0), image.at(iy, x0 + left - padding_),
                static_cast<size_t>(x1 - x0) * image.channels());
  }
  image = std::move(out);
  return absl::OkStatus();
}

std::string RandomHorizontalFlip::Describe() const {
  return absl::StrFormat("RandomHorizontalFlip(p=%g)", p_);
}

absl::Status RandomHorizontalFlip::Apply(Image& image, SampleRng& rng) const {
  if (!rng.Bernoulli(p_)) return absl::OkStatus();
  const int w = image.cols(), c = image.channels();
  for (int y = 0; y < image.rows(); ++y) {
    for (int x = 0; x < w / 2; ++x) {
      std::swap_ranges(image.at(y, x), image.at(y, x) + c,
                       image.at(y, w - 1 - x));
    }
  }
  return absl::OkStatus();
}

std::string Compose::Describe() const {
  std::vector<std::string> parts;
  for (const auto& t : transforms_) parts.push_back(t->Describe());
  return absl::StrCat("Compose(", absl::StrJoin(parts, ", "), ")");
}

absl::Status Compose::Apply(Image& image, SampleRng& rng) const {
  for (const auto& t : transforms_) {
    if (absl::Status s = t->Apply(image, rng); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Transform::ApplyToTensor(Image& image, SampleRng& rng,
                                      const std::vector<float>& mean,
                                      const std::vector<float>& std,
                                      float* out) const {
  if (absl::Status s = Apply(image, rng); !s.ok()) return s;
  ToTensorInto(image, mean, std, out);
  return absl::OkStatus();
}

absl::Status Compose::ApplyToTensor(Image& image, SampleRng& rng,
                                    const std::vector<float>& mean,
                                    const std::vector<float>& std,
                                    float* out) const {
  if (transforms_.empty()) {
    ToTensorInto(image, mean, std, out);
    return absl::OkStatus();
  }
  for (size_t i = 0; i + 1 < transforms_.size(); ++i) {
    if (absl::Status s = transforms_[i]->Apply(image, rng); !s.ok()) return s;
  }
  return transforms_.back()->ApplyToTensor(image, rng, mean, std, out);
}

ImageShape Compose::OutputShape(const ImageShape& in) const {
  ImageShape shape = in;
  for (const auto& t : transforms_) shape = t->OutputShape(shape);
  return shape;
}

void ToTensorInto(const Image& image, const std::vector<float>& mean,
                  const std::vector<float>& std, float* out) {
  const int h = image.rows(), w = image.cols(), c = image.channels();
  const size_t plane = static_cast<size_t>(h) * w;
  const TensorScale t(c, mean, std);
  for (int ch = 0; ch < c; ++ch) {
    float* dst = out + ch * plane;
    for (int y = 0; y < h; ++y) {
      const uint8_t* src = image.row(y) + ch;
      for (int x = 0; x < w; ++x) {
        dst[y * w + x] = src[x * c] * t.scale[ch] + t.offset[ch];
      }
    }
  }
}

absl::StatusOr<std::unique_ptr<Compose>> MakeAugmentation(
    const std::string& preset, int height, int width) {
  std::vector<std::unique_ptr<Transform>> t;
  if (preset == "affine") {
    t.push_back(std::make_unique<RandomAffine>(5, 0.1, 0.1, 0.5, 2.0));
  } else if (preset == "crop_flip") {
    t.push_back(std::make_unique<RandomCrop>(height, width, 4));
    t.push_back(std::make_unique<RandomHorizontalFlip>(0.5));
  } else if (preset != "none" && !preset.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown augmentation '", preset, "' (none, affine, crop_flip)"));
  }
  return std::make_unique<Compose>(std::move(t));
}

}  // namespace gradsync
