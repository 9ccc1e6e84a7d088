// The loader benchmark (`gradsync loader-bench`): time up to
// `batches_to_check` batches of `batch_size` through RandomAffine +
// ToTensor, `repetitions` times, report mean and std; optionally sweep the
// number of loader threads and write a CSV and an error-bar plot titled
// with what was actually timed, and save a grid of (the first 64 images
// of) one augmented batch. Thread-compatible.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

struct LoaderBenchOptions {
  // An image folder (LFW layout or a split), or a directory of WebDataset
  // shards (shard_dataset.h).
  std::string path;
  int batch_size = 512;
  std::vector<int> workers = {1};  // loader thread counts to time
  int batches_to_check = 100;      // at most this many batches per run
  bool get_timing = false;
  int repetitions = 5;
  std::string visualize_batch;  // PNG path of a batch grid; empty = none
  std::string csv;              // sweep results; empty = none
  std::string plot;             // error-bar PNG; empty = none
  std::string augmentation = "affine";
  int channels = 0;
  int prefetch_depth = 2;
  uint64_t seed = 0;
};

struct LoaderTiming {
  int workers = 0;
  double mean_s = 0, std_s = 0;  // per run of batches_to_check batches
  int64_t images = 0;            // per run
  double images_per_s = 0;       // images / mean_s
};

absl::StatusOr<std::vector<LoaderTiming>> RunLoaderBench(
    const LoaderBenchOptions& options, std::ostream& out);

// The plot's title: the images one run timed, in how many batches.
std::string TimedLoadTitle(int64_t images, int batch_size,
                           const std::string& transform);

// Which decoder DecodeImagesPerSecond times.
enum class BenchDecoder {
  kOpenCv,    // cv::imdecode: the ceiling ("bare OpenCV decode")
  kGradsync,  // DecodeImageBytes, what the loader runs (TurboJPEG for JPEGs
              // when built with it, else OpenCV)
};

// Bare decode rate over the first `max_images` files: bytes already in
// memory, one thread, no transform. The ceiling of one loader thread.
absl::StatusOr<double> DecodeImagesPerSecond(const std::string& path,
                                             int max_images, int channels,
                                             BenchDecoder decoder);

}  // namespace gradsync
