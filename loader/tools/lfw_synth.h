// Generates a data set with Labeled Faces in the Wild's exact layout and
// sizes for benchmarks (the real LFW is not reachable here):
//   DIR/<First_Last>/<First_Last>_<nnnn>.jpg
// 5,749 person folders, 13,233 RGB JPEGs of 250x250 with LFW's long-tailed
// images-per-person distribution (most people 1 image, one person 530).
// Images are drawn faces (background, shoulders, head, hair, eyes, mouth,
// lighting and sensor noise) at JPEG quality 90, so decode cost and file
// sizes resemble real photos. Deterministic: the same seed gives the same
// files byte for byte. Thread-compatible.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gradsync {

struct LfwOptions {
  std::string dir;
  uint64_t seed = 0;
  int people = 5749;
  int images = 13233;
  int size = 250;
  int threads = 0;  // 0 = hardware concurrency
};

// Images per person: `images` in total over `people`, each >= 1, long-tailed
// and deterministic; the first entry is the largest.
std::vector<int> LfwImagesPerPerson(int people, int images);

// Unique "First_Last" names, deterministic from the seed.
std::vector<std::string> LfwNames(int people, uint64_t seed);

// One synthetic face photo (RGB order), deterministic from (seed, person, n).
cv::Mat DrawFace(uint64_t seed, int person, int n, int size);

// Writes the data set; skips work when DIR already holds exactly the
// expected files. Progress lines go to `progress`.
absl::Status MakeLfw(const LfwOptions& options, std::ostream& progress);

}  // namespace gradsync
