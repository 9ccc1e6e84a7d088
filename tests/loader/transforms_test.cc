#include "loader/transforms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace gradsync {
namespace {

cv::Mat Ramp(int h, int w, int channels) {
  cv::Mat m(h, w, channels == 1 ? CV_8UC1 : CV_8UC3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        m.ptr<uint8_t>(y)[x * channels + c] =
            static_cast<uint8_t>((y * 16 + x * 3 + c * 50) % 256);
      }
    }
  }
  return m;
}

TEST(AffineTest, IdentityKeepsTheImage) {
  cv::Mat img = Ramp(28, 28, 1);
  cv::Mat out = AffineNearest(img, AffineParams{});
  EXPECT_EQ(cv::norm(img, out, cv::NORM_INF), 0);
}

TEST(AffineTest, TranslationShiftsAndFillsZero) {
  cv::Mat img = Ramp(10, 10, 3);
  AffineParams p;
  p.translate_x = 2;
  p.translate_y = -1;
  cv::Mat out = AffineNearest(img, p);
  // out(y, x) = img(y + 1, x - 2)
  EXPECT_EQ(out.at<cv::Vec3b>(3, 5), img.at<cv::Vec3b>(4, 3));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 0));  // from x = -2
  EXPECT_EQ(out.at<cv::Vec3b>(9, 9), cv::Vec3b(0, 0, 0));  // from y = 10
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
  cv::Mat a = Ramp(28, 28, 1), b = a.clone();
  SampleRng r1(7, 0, 3), r2(7, 0, 3);
  ASSERT_TRUE(t.Apply(a, r1).ok());
  ASSERT_TRUE(t.Apply(b, r2).ok());
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0);
}

TEST(RandomCropTest, PadsAndCropsToSize) {
  RandomCrop t(28, 28, 4);
  cv::Mat img = Ramp(28, 28, 1);
  SampleRng rng(0, 0, 0);
  ASSERT_TRUE(t.Apply(img, rng).ok());
  EXPECT_EQ(img.rows, 28);
  EXPECT_EQ(img.cols, 28);
  RandomCrop too_big(40, 40, 0);
  cv::Mat small = Ramp(28, 28, 1);
  EXPECT_EQ(too_big.Apply(small, rng).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlipTest, AlwaysAndNever) {
  cv::Mat img = Ramp(4, 5, 1), flipped = img.clone();
  SampleRng rng(0, 0, 0);
  ASSERT_TRUE(RandomHorizontalFlip(1.0).Apply(flipped, rng).ok());
  EXPECT_EQ(flipped.at<uint8_t>(2, 0), img.at<uint8_t>(2, 4));
  cv::Mat same = img.clone();
  ASSERT_TRUE(RandomHorizontalFlip(0.0).Apply(same, rng).ok());
  EXPECT_EQ(cv::norm(img, same, cv::NORM_INF), 0);
}

TEST(ToTensorTest, ChwScaledAndNormalized) {
  cv::Mat img(1, 2, CV_8UC3);
  img.at<cv::Vec3b>(0, 0) = {255, 0, 51};
  img.at<cv::Vec3b>(0, 1) = {0, 255, 102};
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
  cv::Mat img(37, 29, CV_8UC3);
  cv::randu(img, 0, 255);
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
cv::Mat ReferenceFixedPointWarp(const cv::Mat& img, const AffineParams& p) {
  const int h = img.rows, w = img.cols;
  const auto m = InverseAffineMatrix(w * 0.5, h * 0.5, p);
  auto fix = [](double v) {
    return static_cast<int64_t>(std::floor(v * 65536.0 + 0.5));
  };
  auto floor16 = [](int64_t v) {
    return static_cast<int>(v >= 0 ? v >> 16 : -((-v + 65535) >> 16));
  };
  cv::Mat out(h, w, img.type(), cv::Scalar::all(0));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int64_t xx = fix(m[2] + m[0] * 0.5 + m[1] * 0.5) +
                         y * fix(m[1]) + x * fix(m[0]);
      const int64_t yy = fix(m[5] + m[3] * 0.5 + m[4] * 0.5) +
                         y * fix(m[4]) + x * fix(m[3]);
      const int ix = floor16(xx), iy = floor16(yy);
      if (ix < 0 || ix >= w || iy < 0 || iy >= h) continue;
      std::memcpy(out.ptr<uint8_t>(y) + x * img.elemSize(),
                  img.ptr<uint8_t>(iy) + ix * img.elemSize(), img.elemSize());
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
    cv::Mat img(size(gen), size(gen), trial % 2 ? CV_8UC3 : CV_8UC1);
    cv::randu(img, 1, 255);  // no zeros: a wrongly outside pixel shows
    AffineParams p;
    p.angle = trial % 10 == 0 ? 90.0 : angle(gen);
    p.translate_x = shift(gen);
    p.translate_y = shift(gen);
    p.scale = scale(gen);
    const cv::Mat want = ReferenceFixedPointWarp(img, p);
    const cv::Mat got = AffineNearest(img, p);
    ASSERT_EQ(cv::norm(want, got, cv::NORM_INF), 0)
        << "trial " << trial << ": " << img.cols << "x" << img.rows
        << " angle " << p.angle << " translate " << p.translate_x << ","
        << p.translate_y << " scale " << p.scale;
    if (img.channels() == 3) {
      std::vector<float> fused(3 * img.total()), plain(3 * img.total());
      AffineNearestToTensor(img, p, {}, {}, fused.data());
      ToTensorInto(want, {}, {}, plain.data());
      ASSERT_EQ(fused, plain) << "trial " << trial;
    }
  }
}

}  // namespace
}  // namespace gradsync
