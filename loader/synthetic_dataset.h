// SyntheticDataset: images made up from their index, like torchvision's
// FakeData, for benchmarks and smoke runs that need no files (a GPU host
// with no data set, a machine without OpenCV). A data set path
// "synthetic:<preset>" names one (OpenDataset, dataset.h); the presets and
// their sizes are in foundation/data_index/synthetic_presets.h.
// Unlike FakeData's, the classes can be learnt: each class has its own
// colour per image quadrant, and every pixel adds noise to it. Sample i of a
// split is the same on every host and in every run (a function of preset,
// split and i), so shards and resumes behave as with files.
//
// Immutable after construction; Load() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "foundation/data_index/synthetic_presets.h"
#include "loader/dataset.h"

namespace gradsync {

class SyntheticDataset : public Dataset {
 public:
  // `path` "synthetic:<preset>", `split` one of the preset's splits,
  // `channels` 0 (the preset's), 1 or 3. INVALID_ARGUMENT for an unknown
  // preset or channel count, NOT_FOUND for an unknown split; each names
  // what exists.
  static absl::StatusOr<std::unique_ptr<SyntheticDataset>> Open(
      const std::string& path, const std::string& split, int channels);

  int64_t size() const override { return size_; }
  int64_t label(int64_t index) const override;
  std::string name(int64_t index) const override;
  int num_classes() const override { return classes_; }
  absl::StatusOr<Image> Load(int64_t index) const override;

 private:
  SyntheticDataset(std::string name, uint64_t salt, int64_t size,
                   ImageShape shape, int classes)
      : name_(std::move(name)),
        salt_(salt),
        size_(size),
        shape_(shape),
        classes_(classes) {}

  const std::string name_;  // "synthetic:cifar10/train"
  const uint64_t salt_;     // tells the splits apart
  const int64_t size_;
  const ImageShape shape_;
  const int classes_;
};

}  // namespace gradsync
