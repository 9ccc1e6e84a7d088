#include "loader/tools/lfw_synth.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "foundation/data_index/image_folder_index.h"
#include "loader/sample_rng.h"

namespace gradsync {
namespace fs = std::filesystem;
namespace {

std::string Word(std::mt19937_64& rng, int syllables) {
  static const char* const kOnset[] = {
      "b", "c", "d", "f", "g", "h",  "j",  "k",  "l",  "m",  "n",  "p",  "r",
      "s", "t", "v", "w", "z", "br", "ch", "st", "tr", "gr", "sh", "th", "cl"};
  static const char* const kVowel[] = {"a",  "e",  "i",  "o",  "u",
                                       "ai", "ea", "ie", "ou", "y"};
  static const char* const kCoda[] = {"",  "",  "",  "n",  "r",  "s",
                                      "l", "m", "t", "nd", "rt", "ck"};
  std::string w;
  for (int s = 0; s < syllables; ++s) {
    w += kOnset[rng() % std::size(kOnset)];
    w += kVowel[rng() % std::size(kVowel)];
    w += kCoda[rng() % std::size(kCoda)];
  }
  w[0] = static_cast<char>(std::toupper(w[0]));
  return w;
}

}  // namespace

std::vector<int> LfwImagesPerPerson(int people, int images) {
  std::vector<int> counts(people, 1);
  if (images <= people) return counts;
  // LFW: about 29% of people have more than one image; the extra images
  // follow a power law (Zipf-like) over them, the largest about 530.
  const int multi = std::max(1, people * 1680 / 5749);
  std::vector<double> weight(multi);
  double total = 0;
  for (int i = 0; i < multi; ++i) {
    weight[i] = 1.0 / std::pow(i + 1.0, 0.85);
    total += weight[i];
  }
  const int extra = images - people;
  int given = 0;
  for (int i = 0; i < multi; ++i) {
    const int e = static_cast<int>(std::floor(extra * weight[i] / total));
    counts[i] += e;
    given += e;
  }
  // Hand out what rounding left over, one each, to the tail of the multi
  // group (people with 2-3 images are the most common after 1).
  for (int i = multi - 1; given < extra; i = (i == 0 ? multi - 1 : i - 1)) {
    ++counts[i];
    ++given;
  }
  return counts;
}

std::vector<std::string> LfwNames(int people, uint64_t seed) {
  std::mt19937_64 rng(SplitMix64(seed ^ 0x6c6677ULL));
  std::set<std::string> seen;
  std::vector<std::string> names;
  while (static_cast<int>(names.size()) < people) {
    std::string name =
        absl::StrCat(Word(rng, 1 + rng() % 2), "_", Word(rng, 1 + rng() % 3));
    if (seen.insert(name).second) names.push_back(std::move(name));
  }
  return names;
}

cv::Mat DrawFace(uint64_t seed, int person, int n, int size) {
  // The person's traits depend on (seed, person); the pose and lighting of
  // this photo also on n.
  std::mt19937_64 who(SplitMix64(seed * 1000003 + person));
  std::mt19937_64 shot(SplitMix64(SplitMix64(seed * 1000003 + person) + n + 1));
  auto u = [](std::mt19937_64& r, double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(r);
  };
  const double s = size / 250.0;
  const cv::Scalar skin(u(who, 150, 240), u(who, 110, 190), u(who, 80, 160));
  const cv::Scalar hair(u(who, 10, 120), u(who, 10, 90), u(who, 5, 70));
  const cv::Scalar shirt(u(who, 0, 255), u(who, 0, 255), u(who, 0, 255));
  const double face_w = u(who, 48, 62) * s, face_h = u(who, 66, 80) * s;

  cv::Mat img(size, size, CV_8UC3);
  // Background: a vertical gradient between two random colours.
  const cv::Vec3d top(u(shot, 0, 255), u(shot, 0, 255), u(shot, 0, 255));
  const cv::Vec3d bottom(u(shot, 0, 255), u(shot, 0, 255), u(shot, 0, 255));
  for (int y = 0; y < size; ++y) {
    const double t = static_cast<double>(y) / size;
    const cv::Vec3d c = top * (1 - t) + bottom * t;
    img.row(y).setTo(cv::Scalar(c[0], c[1], c[2]));
  }
  // Background clutter.
  for (int i = 0; i < 6; ++i) {
    cv::rectangle(img, cv::Point(u(shot, 0, size), u(shot, 0, size)),
                  cv::Point(u(shot, 0, size), u(shot, 0, size)),
                  cv::Scalar(u(shot, 0, 255), u(shot, 0, 255), u(shot, 0, 255)),
                  cv::FILLED);
  }
  const cv::Point c(size / 2 + u(shot, -12, 12) * s,
                    size / 2 + u(shot, -10, 10) * s);
  const double tilt = u(shot, -12, 12);
  // Shoulders and shirt.
  cv::ellipse(img, cv::Point(c.x, c.y + 140 * s), cv::Size(110 * s, 70 * s), 0,
              0, 360, shirt, cv::FILLED, cv::LINE_AA);
  // Neck, hair behind the head, head.
  cv::rectangle(img, cv::Point(c.x - 18 * s, c.y + 40 * s),
                cv::Point(c.x + 18 * s, c.y + 85 * s), skin * 0.9, cv::FILLED);
  cv::ellipse(img, cv::Point(c.x, c.y - 12 * s),
              cv::Size(face_w + 8 * s, face_h + 4 * s), tilt, 180, 360, hair,
              cv::FILLED, cv::LINE_AA);
  cv::ellipse(img, c, cv::Size(face_w, face_h), tilt, 0, 360, skin, cv::FILLED,
              cv::LINE_AA);
  // Eyes, brows, nose, mouth.
  for (int side : {-1, 1}) {
    const cv::Point eye(c.x + side * 20 * s, c.y - 12 * s);
    cv::ellipse(img, eye, cv::Size(9 * s, 5 * s), tilt, 0, 360,
                cv::Scalar(240, 240, 240), cv::FILLED, cv::LINE_AA);
    cv::circle(img, eye, 4 * s, cv::Scalar(40, 30, 20), cv::FILLED,
               cv::LINE_AA);
    cv::line(img, cv::Point(eye.x - 10 * s, eye.y - 10 * s),
             cv::Point(eye.x + 10 * s, eye.y - 12 * s), hair, 3, cv::LINE_AA);
  }
  cv::line(img, cv::Point(c.x, c.y - 4 * s),
           cv::Point(c.x - 5 * s, c.y + 16 * s), skin * 0.7, 2, cv::LINE_AA);
  cv::ellipse(img, cv::Point(c.x, c.y + 32 * s), cv::Size(16 * s, 6 * s), tilt,
              0, 180, cv::Scalar(90, 40, 50), 3, cv::LINE_AA);
  // Lighting from one side, soft focus and sensor noise.
  cv::Mat light(size, size, CV_32FC1);
  const double dir = u(shot, -1, 1);
  for (int x = 0; x < size; ++x) {
    light.col(x).setTo(0.8 + 0.25 * dir * (x - size / 2.0) / size);
  }
  cv::Mat f;
  img.convertTo(f, CV_32FC3);
  std::vector<cv::Mat> ch;
  cv::split(f, ch);
  for (cv::Mat& m : ch) m = m.mul(light);
  cv::merge(ch, f);
  cv::GaussianBlur(f, f, cv::Size(3, 3), 0.8);
  cv::Mat noise(size, size, CV_32FC3);
  cv::theRNG().state = SplitMix64(seed + person * 7919 + n);
  cv::randn(noise, 0, 6);
  f += noise;
  f.convertTo(img, CV_8UC3);
  return img;  // drawn in RGB order
}

absl::Status MakeLfw(const LfwOptions& o, std::ostream& progress) {
  if (o.people < 1 || o.images < o.people || o.size < 16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "make-lfw: need people >= 1, images >= people, size >= 16 (got %d, "
        "%d, %d)",
        o.people, o.images, o.size));
  }
  const std::vector<int> counts = LfwImagesPerPerson(o.people, o.images);
  const std::vector<std::string> names = LfwNames(o.people, o.seed);
  if (absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(o.dir);
      index.ok() && static_cast<int>(index->classes.size()) == o.people &&
      static_cast<int>(index->samples.size()) == o.images) {
    progress << "make-lfw: " << o.dir << " already holds " << o.people
             << " people / " << o.images << " images\n";
    return absl::OkStatus();
  }
  struct Job {
    int person, n;
  };
  std::vector<Job> jobs;
  for (int p = 0; p < o.people; ++p) {
    std::error_code ec;
    fs::create_directories(fs::path(o.dir) / names[p], ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create ", o.dir, "/", names[p], ": ", ec.message()));
    }
    for (int n = 1; n <= counts[p]; ++n) jobs.push_back({p, n});
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<bool> failed{false};
  std::string error;
  absl::Mutex error_mu;
  const int threads = o.threads > 0
                          ? o.threads
                          : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::vector<uchar> buf;
      for (size_t i; (i = next++) < jobs.size() && !failed;) {
        const Job& j = jobs[i];
        cv::Mat rgb = DrawFace(o.seed, j.person, j.n, o.size), bgr;
        cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
        cv::imencode(".jpg", bgr, buf, {cv::IMWRITE_JPEG_QUALITY, 90});
        const fs::path path =
            fs::path(o.dir) / names[j.person] /
            absl::StrFormat("%s_%04d.jpg", names[j.person], j.n);
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(buf.data()), buf.size());
        if (!out) {
          absl::MutexLock lock(&error_mu);
          error = absl::StrCat("cannot write ", path.string());
          failed = true;
        }
        bytes += buf.size();
        if (i % 2000 == 0) {
          absl::MutexLock lock(&error_mu);
          progress << absl::StrFormat("make-lfw: %d / %d images\n", i,
                                      jobs.size());
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  if (failed) return absl::DataLossError(error);
  progress << absl::StrFormat(
      "make-lfw: wrote %d images of %dx%d for %d people to %s (%.1f MB, mean "
      "%.1f KB per file)\n",
      jobs.size(), o.size, o.size, o.people, o.dir, bytes / 1e6,
      bytes / 1e3 / jobs.size());
  return absl::OkStatus();
}

}  // namespace gradsync
