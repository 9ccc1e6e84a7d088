// Image transforms, composable like torchvision.transforms, over 8-bit
// HWC images (Image, RGB or grayscale), plus ToTensor/Normalize into a
// float CHW buffer. Random transforms draw from the sample's SampleRng.
//
// Semantics follow torchvision 0.14 on PIL images:
//  - RandomAffine(degrees, translate, scale): angle ~ U(-d, d), translation
//    round(U(-t*W, t*W)) pixels, scale ~ U(s0, s1), nearest-neighbour
//    sampling about the image centre, fill 0.
//  - RandomCrop(size, padding): zero padding, then a uniform crop.
//  - RandomHorizontalFlip(p).
// Transforms are immutable after construction and thread-safe.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "loader/image.h"
#include "loader/sample_rng.h"

namespace gradsync {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string Describe() const = 0;
  // Replaces `image` by its transformed version.
  virtual absl::Status Apply(Image& image, SampleRng& rng) const = 0;
  // Apply, then ToTensor/Normalize into `out` (C x H x W floats of the
  // transformed image's shape, checked by the caller through OutputShape).
  // Transforms that can fuse the two (RandomAffine samples straight into
  // the tensor) override it; the result is the same.
  virtual absl::Status ApplyToTensor(Image& image, SampleRng& rng,
                                     const std::vector<float>& mean,
                                     const std::vector<float>& std,
                                     float* out) const;
  // The shape (rows, cols, channels) Apply would produce for `in`.
  virtual ImageShape OutputShape(const ImageShape& in) const { return in; }
};

struct AffineParams {
  double angle = 0;  // degrees, counter-clockwise as torchvision
  int translate_x = 0, translate_y = 0;
  double scale = 1;
};

// torchvision's _get_inverse_affine_matrix without shear: maps output pixel
// coordinates to input coordinates about centre (cx, cy).
std::array<double, 6> InverseAffineMatrix(double cx, double cy,
                                          const AffineParams& p);

// torchvision.transforms.functional.affine on a PIL image with NEAREST
// interpolation and fill 0.
Image AffineNearest(const Image& image, const AffineParams& p);
// The same warp written straight into a C x H x W float tensor with
// ToTensor/Normalize applied (no intermediate image).
void AffineNearestToTensor(const Image& image, const AffineParams& p,
                           const std::vector<float>& mean,
                           const std::vector<float>& std, float* out);

class RandomAffine : public Transform {
 public:
  RandomAffine(double degrees, double translate_x, double translate_y,
               double scale_min, double scale_max)
      : degrees_(degrees),
        translate_x_(translate_x),
        translate_y_(translate_y),
        scale_min_(scale_min),
        scale_max_(scale_max) {}
  AffineParams SampleParams(SampleRng& rng, int width, int height) const;
  std::string Describe() const override;
  absl::Status Apply(Image& image, SampleRng& rng) const override;
  absl::Status ApplyToTensor(Image& image, SampleRng& rng,
                             const std::vector<float>& mean,
                             const std::vector<float>& std,
                             float* out) const override;

 private:
  double degrees_, translate_x_, translate_y_, scale_min_, scale_max_;
};

class RandomCrop : public Transform {
 public:
  RandomCrop(int height, int width, int padding)
      : height_(height), width_(width), padding_(padding) {}
  std::string Describe() const override;
  absl::Status Apply(Image& image, SampleRng& rng) const override;
  ImageShape OutputShape(const ImageShape& in) const override {
    return {height_, width_, in.channels};
  }

 private:
  int height_, width_, padding_;
};

class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p) : p_(p) {}
  std::string Describe() const override;
  absl::Status Apply(Image& image, SampleRng& rng) const override;

 private:
  double p_;
};

// Applies transforms in order.
class Compose : public Transform {
 public:
  explicit Compose(std::vector<std::unique_ptr<Transform>> transforms)
      : transforms_(std::move(transforms)) {}
  std::string Describe() const override;
  absl::Status Apply(Image& image, SampleRng& rng) const override;
  // All but the last step, then the last step's (possibly fused) version.
  absl::Status ApplyToTensor(Image& image, SampleRng& rng,
                             const std::vector<float>& mean,
                             const std::vector<float>& std,
                             float* out) const override;
  ImageShape OutputShape(const ImageShape& in) const override;
  bool empty() const { return transforms_.empty(); }

 private:
  std::vector<std::unique_ptr<Transform>> transforms_;
};

// ToTensor (+ Normalize when mean/std are given): writes `image` (H x W x C,
// 8-bit) as float C x H x W into `out`, value / 255, then (v - mean) / std
// per channel. `mean` and `std` are empty or hold one value per channel.
void ToTensorInto(const Image& image, const std::vector<float>& mean,
                  const std::vector<float>& std, float* out);

// The augmentation presets a JobSpec names: "none", "affine" (the seeds'
// RandomAffine(5, (0.1, 0.1), (0.5, 2.0))), "crop_flip" (RandomCrop with
// padding 4 to the image size, then RandomHorizontalFlip(0.5)).
absl::StatusOr<std::unique_ptr<Compose>> MakeAugmentation(
    const std::string& preset, int height, int width);

}  // namespace gradsync
