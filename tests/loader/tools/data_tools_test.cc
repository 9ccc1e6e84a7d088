#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <set>

#include "foundation/data_index/image_folder_index.h"
#include "loader/image_decoder.h"
#include "loader/tools/fashion_mnist.h"
#include "loader/tools/lfw_synth.h"
#include "loader/tools/loader_bench.h"

namespace gradsync {
namespace {
namespace fs = std::filesystem;

TEST(FashionMnistTest, ParsesImagesAndDropsMalformedEntries) {
  std::string json = "{\"data\":[[";
  for (int i = 0; i < 784; ++i)
    json += (i ? "," : "") + std::to_string(i % 256);
  json += "],[],[1,2,3],[";
  for (int i = 0; i < 784; ++i) json += (i ? ",7" : "7");
  json += "]]}";
  auto images = ParseFashionMnistJson(json);
  ASSERT_TRUE(images.ok()) << images.status();
  ASSERT_EQ(images->size(), 2u);
  EXPECT_EQ((*images)[0][300], 300 % 256);
  EXPECT_EQ((*images)[1][783], 7);
  EXPECT_FALSE(ParseFashionMnistJson("{\"other\": 1}").ok());
  EXPECT_FALSE(ParseFashionMnistJson("{\"data\":[[300]]}").ok());
}

TEST(FashionMnistTest, FolderNamesSortInLabelOrder) {
  std::vector<std::string> names;
  for (int k = 0; k < 10; ++k) names.push_back(FashionMnistFolder(k));
  EXPECT_EQ(names[0], "0_T-shirt_Top");
  EXPECT_EQ(names[9], "9_Ankle_Boot");
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(VerifyFashionMnist("/nonexistent-gradsync").code(),
            absl::StatusCode::kNotFound);
}

TEST(LfwTest, LayoutMatchesLfw) {
  const std::vector<int> counts = LfwImagesPerPerson(5749, 13233);
  ASSERT_EQ(counts.size(), 5749u);
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), 13233);
  EXPECT_GE(*std::min_element(counts.begin(), counts.end()), 1);
  const int max = *std::max_element(counts.begin(), counts.end());
  EXPECT_GT(max, 400);  // LFW's largest folder holds 530
  EXPECT_LT(max, 700);
  const int singles = std::count(counts.begin(), counts.end(), 1);
  EXPECT_GT(singles, 3500);  // LFW: 4069 people with one image
  const std::vector<std::string> names = LfwNames(5749, 0);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 5749u);
  EXPECT_EQ(names, LfwNames(5749, 0));
  EXPECT_NE(names, LfwNames(5749, 1));
}

TEST(LfwTest, FacesAreDeterministicRgb250) {
  cv::Mat a = DrawFace(42, 7, 1, 250), b = DrawFace(42, 7, 1, 250);
  cv::Mat c = DrawFace(42, 7, 2, 250);
  EXPECT_EQ(a.size(), cv::Size(250, 250));
  EXPECT_EQ(a.type(), CV_8UC3);
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0);
  EXPECT_GT(cv::norm(a, c, cv::NORM_L1), 0);
}

TEST(LfwTest, MakeLfwWritesTheLayout) {
  const fs::path dir = fs::temp_directory_path() /
                       ("gradsync_lfw_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  LfwOptions o;
  o.dir = dir.string();
  o.people = 12;
  o.images = 30;
  o.size = 64;
  std::ostringstream progress;
  ASSERT_TRUE(MakeLfw(o, progress).ok()) << progress.str();
  auto index = ScanImageFolder(o.dir);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->classes.size(), 12u);
  EXPECT_EQ(index->samples.size(), 30u);
  const std::string& first = index->samples[0].path;
  const std::string person = index->classes[0];
  EXPECT_NE(first.find(person + "/" + person + "_0001.jpg"), std::string::npos);
  auto image = DecodeImageFile(first, 0);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->channels(), 3);
  // Idempotent: a second run finds the set complete.
  std::ostringstream again;
  ASSERT_TRUE(MakeLfw(o, again).ok());
  EXPECT_NE(again.str().find("already holds"), std::string::npos);

  // loader-bench on it says what it timed and showed: 30 images are 4
  // batches of 8, however many batches were asked for.
  LoaderBenchOptions bench;
  bench.path = o.dir;
  bench.batch_size = 8;
  bench.batches_to_check = 100;
  bench.get_timing = true;
  bench.repetitions = 1;
  bench.visualize_batch = (dir / "batch.png").string();
  std::ostringstream out;
  absl::StatusOr<std::vector<LoaderTiming>> timed = RunLoaderBench(bench, out);
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_EQ(timed->front().images, 30);
  EXPECT_NE(out.str().find("wrote the 8 images of the first augmented batch"),
            std::string::npos)
      << out.str();
  EXPECT_TRUE(fs::exists(dir / "batch.png"));
  EXPECT_EQ(TimedLoadTitle(30, 8, "RandomAffine"),
            "Loading 30 images (4 batches of up to 8; RandomAffine)");
  EXPECT_EQ(TimedLoadTitle(512, 512, "x"),
            "Loading 512 images (1 batch of up to 512; x)");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradsync
