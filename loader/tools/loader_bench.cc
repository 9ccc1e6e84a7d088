#include "loader/tools/loader_bench.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <opencv2/imgcodecs.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "foundation/data_index/image_folder_index.h"
#include "foundation/data_index/shard_index.h"
#include "loader/batch_loader.h"
#include "loader/image_decoder.h"
#include "loader/image_folder_dataset.h"
#include "loader/shard_dataset.h"
#include "loader/tools/plot.h"

namespace gradsync {

std::string TimedLoadTitle(int64_t images, int batch_size,
                           const std::string& transform) {
  const int64_t batches = (images + batch_size - 1) / std::max(batch_size, 1);
  return absl::StrFormat("Loading %d images (%d batch%s of up to %d; %s)",
                         images, batches, batches == 1 ? "" : "es", batch_size,
                         transform);
}

absl::StatusOr<std::vector<LoaderTiming>> RunLoaderBench(
    const LoaderBenchOptions& o, std::ostream& out) {
  // An image folder, or the same images as WebDataset shards.
  std::shared_ptr<const Dataset> dataset;
  if (HoldsShards(o.path)) {
    auto shards = ShardDataset::Open(o.path, o.channels);
    if (!shards.ok()) return shards.status();
    dataset = std::move(*shards);
  } else {
    auto folder = ImageFolderDataset::Open(o.path, o.channels);
    if (!folder.ok()) return folder.status();
    dataset = std::move(*folder);
  }
  absl::StatusOr<Image> first = dataset->Load(0);
  if (!first.ok()) return first.status();
  absl::StatusOr<std::unique_ptr<Compose>> augment =
      MakeAugmentation(o.augmentation, first->rows(), first->cols());
  if (!augment.ok()) return augment.status();
  std::shared_ptr<const Transform> transform = std::move(*augment);
  out << absl::StrFormat(
      "loader-bench: %s: %d images, %s + ToTensor, batch %d\n", o.path,
      dataset->size(), transform->Describe(), o.batch_size);
  std::vector<int64_t> all(dataset->size());
  std::iota(all.begin(), all.end(), 0);  // shuffle=False, as the exercise

  std::vector<LoaderTiming> results;
  for (int workers : o.workers) {
    LoaderOptions lo;
    lo.batch_size = o.batch_size;
    lo.threads = workers;
    lo.prefetch_depth = o.prefetch_depth;
    lo.seed = o.seed;
    absl::StatusOr<std::unique_ptr<BatchLoader>> loader =
        BatchLoader::Create(dataset, transform, lo);
    if (!loader.ok()) return loader.status();
    if (!o.visualize_batch.empty() && results.empty()) {
      if (absl::Status s = (*loader)->StartEpoch(0, all); !s.ok()) return s;
      Batch batch;
      absl::StatusOr<bool> got = (*loader)->Next(&batch);
      if (!got.ok()) return got.status();
      constexpr int kShown = 64;
      const cv::Mat grid = BatchGrid(batch.images, kShown, 8);
      if (!cv::imwrite(o.visualize_batch, grid)) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot write ", o.visualize_batch));
      }
      const int64_t in_batch = batch.images.size(0);
      out << "loader-bench: wrote "
          << (in_batch > kShown
                  ? absl::StrCat("the first ", kShown, " of the ", in_batch,
                                 " images of the first augmented batch")
                  : absl::StrCat("the ", in_batch,
                                 " images of the first augmented batch"))
          << " to " << o.visualize_batch << "\n";
    }
    if (!o.get_timing) continue;
    std::vector<double> seconds;
    LoaderTiming t;
    t.workers = workers;
    for (int rep = 0; rep < o.repetitions; ++rep) {
      if (absl::Status s = (*loader)->StartEpoch(rep, all); !s.ok()) return s;
      const absl::Time start = absl::Now();
      int64_t images = 0;
      Batch batch;
      for (int b = 0; b < o.batches_to_check; ++b) {
        absl::StatusOr<bool> got = (*loader)->Next(&batch);
        if (!got.ok()) return got.status();
        if (!*got) break;
        images += batch.images.size(0);
      }
      seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
      t.images = images;
    }
    const double mean =
        std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size();
    double var = 0;
    for (double s : seconds) var += (s - mean) * (s - mean);
    t.mean_s = mean;
    t.std_s = std::sqrt(var / seconds.size());  // numpy's std (ddof=0)
    t.images_per_s = t.images / mean;
    out << absl::StrFormat(
        "workers %d: Timing: %.4f+-%.4f s for %d images (%.0f images/s)\n",
        workers, t.mean_s, t.std_s, t.images, t.images_per_s);
    results.push_back(t);
  }
  if (!o.csv.empty() && !results.empty()) {
    std::ofstream csv(o.csv);
    csv << "workers,mean_s,std_s,images,images_per_s\n";
    for (const auto& t : results) {
      csv << absl::StrFormat("%d,%.6f,%.6f,%d,%.1f\n", t.workers, t.mean_s,
                             t.std_s, t.images, t.images_per_s);
    }
    csv.close();
    if (!csv) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write ", o.csv));
    }
    out << "loader-bench: wrote " << o.csv << "\n";
  }
  if (!o.plot.empty() && !results.empty()) {
    ErrorBarSeries s;
    s.label = "gradsync loader";
    for (const auto& t : results) {
      s.x.push_back(t.workers);
      s.mean.push_back(t.mean_s);
      s.stddev.push_back(t.std_s);
    }
    // What was timed: at most batches_to_check batches, fewer when the
    // data set ends first.
    const cv::Mat plot =
        ErrorBarPlot({s},
                     TimedLoadTitle(results.front().images, o.batch_size,
                                    transform->Describe()),
                     "loader threads", "seconds (mean +- std)");
    if (!cv::imwrite(o.plot, plot)) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write ", o.plot));
    }
    out << "loader-bench: wrote " << o.plot << "\n";
  }
  return results;
}

absl::StatusOr<double> DecodeImagesPerSecond(const std::string& path,
                                             int max_images, int channels,
                                             BenchDecoder decoder) {
  absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(path);
  if (!index.ok()) return index.status();
  const int64_t n = std::min<int64_t>(
      max_images, static_cast<int64_t>(index->samples.size()));
  const int flags = channels == 1   ? cv::IMREAD_GRAYSCALE
                    : channels == 3 ? cv::IMREAD_COLOR
                                    : cv::IMREAD_ANYCOLOR;
  // Read the files first: the ceiling is the decode alone.
  std::vector<std::string> files(n);
  for (int64_t i = 0; i < n; ++i) {
    std::ifstream in(index->samples[i].path, std::ios::binary);
    files[i].assign(std::istreambuf_iterator<char>(in), {});
  }
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    const std::string& path_i = index->samples[i].path;
    if (decoder == BenchDecoder::kGradsync) {
      absl::StatusOr<Image> image =
          DecodeImageBytes(files[i], channels, path_i);
      if (!image.ok()) return image.status();
      continue;
    }
    const cv::Mat raw(1, static_cast<int>(files[i].size()), CV_8UC1,
                      files[i].data());
    if (cv::imdecode(raw, flags).empty()) {
      return absl::DataLossError(absl::StrCat("cannot decode ", path_i));
    }
  }
  return n / absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace gradsync
