#include "loader/transforms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <utility>

namespace gradsync {
namespace {

// Uniform pixels in [low, 255], the same for the same arguments.
Image Random(int h, int w, int channels, int low) {
  std::mt19937 gen(h * 1000 + w * 10 + channels);
  std::uniform_int_distribution<int> value(low, 255);
  Image m(h, w, channels);
  for (size_t i = 0; i < m.size_bytes(); ++i) m.data()[i] = value(gen);
  return m;
}

Image Ramp(int h, int w, int channels) {
  Image m(h, w, channels);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        m.at(y, x)[c] =
            static_cast<uint8_t>((y * 16 + x * 3 + c * 50) % 256);
      }
    }
  }
  return m;
}

TEST(AffineTest, IdentityKeepsTheImage) {
  Image img = Ramp(28, 28, 1);
  Image out = AffineNearest(img, AffineParams{});
  EXPECT_EQ(img, out);
}

TEST(AffineTest, TranslationShiftsAndFillsZero) {
  Image img = Ramp(10, 10, 3);
  AffineParams p;
  p.translate_x = 2;
  p.translate_y = -1;
  Image out = AffineNearest(img, p);
  auto pixel = [](const Image& m, int y, int x) {
    return std::vector<int>(m.at(y, x), m.at(y, x) + m.channels());
  };
  // out(y, x) = img(y + 1, x - 2)
  EXPECT_EQ(pixel(out, 3, 5), pixel(img, 4, 3));
  EXPECT_EQ(pixel(out, 0, 0), std::vector<int>(3, 0));  // from x = -2
  EXPECT_EQ(pixel(out, 9, 9), std::vector<int>(3, 0));  // from y = 10
}

TEST(AffineTest, InverseMatrixMatchesTorchvisionFormula) {
  AffineParams p;
  p.angle = 90;
  p.scale = 2;
  const auto m = InverseAffineMatrix(14, 14, p);
  // torchvision: [d, -b, 0, -c, a, 0] / scale with a=d=cos, b=-sin, c=sin.
  EXPECT_NEAR(m[0], 0, 1e-12);
  EXPECT_NEAR(m[1], 0.5, 1e-12);
  EXPECT_NEAR(m[3], -0.5, 1e-12);
  EXPECT_NEAR(m[4], 0, 1e-12);
  // The centre maps to itself.
  EXPECT_NEAR(m[0] * 14 + m[1] * 14 + m[2], 14, 1e-9);
  EXPECT_NEAR(m[3] * 14 + m[4] * 14 + m[5], 14, 1e-9);
}

TEST(RandomAffineTest, ParametersStayInTheirRanges) {
  RandomAffine t(5, 0.1, 0.1, 0.5, 2.0);
  for (int i = 0; i < 1000; ++i) {
    SampleRng rng(1, 2, i);
    AffineParams p = t.SampleParams(rng, 250, 250);
    EXPECT_LE(std::abs(p.angle), 5);
    EXPECT_LE(std::abs(p.translate_x), 25);
    EXPECT_LE(std::abs(p.translate_y), 25);
    EXPECT_GE(p.scale, 0.5);
    EXPECT_LE(p.scale, 2.0);
  }
}

TEST(RandomAffineTest, SameSeedSameOutput) {
  RandomAffine t(5, 0.1, 0.1, 0.5, 2.0);
  Image a = Ramp(28, 28, 1), b = a;
  SampleRng r1(7, 0, 3), r2(7, 0, 3);
  ASSERT_TRUE(t.Apply(a, r1).ok());
  ASSERT_TRUE(t.Apply(b, r2).ok());
  EXPECT_EQ(a, b);
}

TEST(RandomCropTest, PadsAndCropsToSize) {
  RandomCrop t(28, 28, 4);
  Image img = Ramp(28, 28, 1);
  SampleRng rng(0, 0, 0);
  ASSERT_TRUE(t.Apply(img, rng).ok());
  EXPECT_EQ(img.rows(), 28);
  EXPECT_EQ(img.cols(), 28);
  RandomCrop too_big(40, 40, 0);
  Image small = Ramp(28, 28, 1);
  EXPECT_EQ(too_big.Apply(small, rng).code(),
            absl::StatusCode::kInvalidArgument);
}

// Every crop window of the zero-padded image, against the padded image
// built pixel by pixel (torchvision pads, then crops).
TEST(RandomCropTest, EqualsCroppingThePaddedImage) {
  for (int channels : {1, 3}) {
    const Image img = Ramp(7, 9, channels);
    const int pad = 3, h = 5, w = 11;
    Image padded(7 + 2 * pad, 9 + 2 * pad, channels);
    for (int y = 0; y < img.rows(); ++y) {
      std::memcpy(padded.at(y + pad, pad), img.row(y), img.row_bytes());
    }
    std::set<std::pair<int, int>> corners;
    for (int i = 0; i < 1000; ++i) {
      SampleRng rng(5, 0, i);
      Image out = img;
      ASSERT_TRUE(RandomCrop(h, w, pad).Apply(out, rng).ok());
      ASSERT_EQ(out.shape(), (ImageShape{h, w, channels}));
      // Find the window it took: exactly one must match.
      int matches = 0;
      for (int top = 0; top + h <= padded.rows(); ++top) {
        for (int left = 0; left + w <= padded.cols(); ++left) {
          bool same = true;
          for (int y = 0; y < h && same; ++y) {
            same = std::memcmp(out.row(y), padded.at(top + y, left),
                               out.row_bytes()) == 0;
          }
          if (same) {
            ++matches;
            corners.insert({top, left});
          }
        }
      }
      ASSERT_GE(matches, 1) << "crop " << i << " is no window of the padding";
    }
    // Every window position occurs (9 tops x 5 lefts).
    EXPECT_EQ(corners.size(), 45u);
  }
}

TEST(FlipTest, AlwaysAndNever) {
  Image img = Ramp(4, 5, 3), flipped = img;
  SampleRng rng(0, 0, 0);
  ASSERT_TRUE(RandomHorizontalFlip(1.0).Apply(flipped, rng).ok());
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 5; ++x) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(flipped.at(y, x)[c], img.at(y, 4 - x)[c]);
      }
    }
  }
  Image same = img;
  ASSERT_TRUE(RandomHorizontalFlip(0.0).Apply(same, rng).ok());
  EXPECT_EQ(img, same);
}

TEST(ToTensorTest, ChwScaledAndNormalized) {
  Image img(1, 2, 3);
  const uint8_t pixels[] = {255, 0, 51, 0, 255, 102};
  std::memcpy(img.data(), pixels, sizeof(pixels));
  float out[6];
  ToTensorInto(img, {}, {}, out);
  EXPECT_FLOAT_EQ(out[0], 1.0f);  // channel 0, pixel 0
  EXPECT_FLOAT_EQ(out[1], 0.0f);  // channel 0, pixel 1
  EXPECT_FLOAT_EQ(out[3], 1.0f);  // channel 1, pixel 1
  EXPECT_FLOAT_EQ(out[4], 0.2f);
  ToTensorInto(img, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, out);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], -1.0f);
}

TEST(PresetTest, KnownAndUnknown) {
  auto affine = MakeAugmentation("affine", 28, 28);
  ASSERT_TRUE(affine.ok());
  EXPECT_NE((*affine)->Describe().find("RandomAffine(degrees=5"),
            std::string::npos);
  EXPECT_TRUE((*MakeAugmentation("none", 28, 28))->empty());
  EXPECT_EQ(MakeAugmentation("mixup", 28, 28).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

TEST(FusedAffineTest, EqualsWarpThenToTensor) {
  Image img = Random(37, 29, 3, 0);
  const std::vector<float> mean = {0.5f, 0.4f, 0.3f}, std = {0.2f, 0.3f, 0.4f};
  for (double angle : {0.0, 4.5, 90.0}) {
    AffineParams p;
    p.angle = angle;
    p.translate_x = 3;
    p.translate_y = -2;
    p.scale = 1.3;
    std::vector<float> fused(3 * 37 * 29), plain(3 * 37 * 29);
    AffineNearestToTensor(img, p, mean, std, fused.data());
    ToTensorInto(AffineNearest(img, p), mean, std, plain.data());
    for (size_t i = 0; i < fused.size(); ++i) {
      ASSERT_FLOAT_EQ(fused[i], plain[i]) << "angle " << angle << " at " << i;
    }
  }
}

// Pillow's fixed-point affine sampling written pixel by pixel with a bounds
// check on every sample: the oracle for the warp's per-row inside interval.
Image ReferenceFixedPointWarp(const Image& img, const AffineParams& p) {
  const int h = img.rows(), w = img.cols();
  const auto m = InverseAffineMatrix(w * 0.5, h * 0.5, p);
  auto fix = [](double v) {
    return static_cast<int64_t>(std::floor(v * 65536.0 + 0.5));
  };
  auto floor16 = [](int64_t v) {
    return static_cast<int>(v >= 0 ? v >> 16 : -((-v + 65535) >> 16));
  };
  Image out(h, w, img.channels());
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int64_t xx = fix(m[2] + m[0] * 0.5 + m[1] * 0.5) +
                         y * fix(m[1]) + x * fix(m[0]);
      const int64_t yy = fix(m[5] + m[3] * 0.5 + m[4] * 0.5) +
                         y * fix(m[4]) + x * fix(m[3]);
      const int ix = floor16(xx), iy = floor16(yy);
      if (ix < 0 || ix >= w || iy < 0 || iy >= h) continue;
      std::memcpy(out.at(y, x), img.at(iy, ix), img.channels());
    }
  }
  return out;
}

TEST(AffineTest, RotationsMatchThePerPixelReferenceAtTheBorders) {
  // Random rotations, large shifts and scales, odd sizes: many rows enter
  // and leave the input at different x, some rows miss it entirely.
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> angle(-180, 180), scale(0.2, 3.0);
  std::uniform_int_distribution<int> shift(-40, 40), size(1, 45);
  for (int trial = 0; trial < 300; ++trial) {
    const int rows = size(gen), cols = size(gen);
    // No zeros: a wrongly outside pixel shows.
    Image img = Random(rows, cols, trial % 2 ? 3 : 1, 1);
    AffineParams p;
    p.angle = trial % 10 == 0 ? 90.0 : angle(gen);
    p.translate_x = shift(gen);
    p.translate_y = shift(gen);
    p.scale = scale(gen);
    const Image want = ReferenceFixedPointWarp(img, p);
    const Image got = AffineNearest(img, p);
    ASSERT_TRUE(want == got)
        << "trial " << trial << ": " << img.cols() << "x" << img.rows()
        << " angle " << p.angle << " translate " << p.translate_x << ","
        << p.translate_y << " scale " << p.scale;
    if (img.channels() == 3) {
      std::vector<float> fused(img.size_bytes()), plain(img.size_bytes());
      AffineNearestToTensor(img, p, {}, {}, fused.data());
      ToTensorInto(want, {}, {}, plain.data());
      ASSERT_EQ(fused, plain) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace gradsync
