#include "coordinator/cli/curve_plot.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

namespace gradsync::cli {
namespace {

v1::JobCurves Curves(int steps, int epochs_evaluated) {
  v1::JobCurves c;
  c.set_job_id("job-000009");
  c.set_stride(1);
  for (int s = 1; s <= steps; ++s) {
    v1::CurvePoint* p = c.add_train();
    p->set_step(s);
    p->set_epoch((s - 1) / 10);
    p->set_loss(2.0 / s);
    p->set_samples_per_sec(1000 + s);
  }
  for (int e = 0; e < epochs_evaluated; ++e) {
    v1::EvalMetrics* m = c.add_eval();
    m->set_epoch(e);
    m->set_accuracy(0.6 + 0.1 * e);
    m->set_loss(0.5);
  }
  return c;
}

// Pixels of the BGR colour `bgr` in the rows [y0, y1).
int CountColour(const cv::Mat& img, cv::Vec3b bgr, int y0, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = 0; x < img.cols; ++x) n += img.at<cv::Vec3b>(y, x) == bgr;
  }
  return n;
}

TEST(CurvePlotTest, EpochEndIsTheLastStepOfTheEpoch) {
  v1::JobCurves c = Curves(30, 0);
  EXPECT_EQ(EpochEndStep(c, 0), 10);
  EXPECT_EQ(EpochEndStep(c, 2), 30);
  EXPECT_EQ(EpochEndStep(c, 3), -1);
}

TEST(CurvePlotTest, CsvHasEveryPointAndEvaluation) {
  std::string csv = CurvesCsv(Curves(20, 2));
  EXPECT_EQ(csv.rfind("kind,step,epoch,loss,samples_per_sec,accuracy\n", 0),
            0u);
  // Epochs counted from 1, as everything a person reads counts them.
  EXPECT_NE(csv.find("\ntrain,1,1,2,1001,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\ntrain,20,2,0.1,1020,\n"), std::string::npos);
  EXPECT_NE(csv.find("\neval,10,1,0.5,,0.6\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\neval,20,2,0.5,,0.7\n"), std::string::npos);
}

TEST(CurvePlotTest, PngHasAPanelPerCurveWithItsLine) {
  ASSERT_TRUE(CanPlotPng());
  absl::StatusOr<std::string> png = CurvesPng(Curves(30, 3), "a title");
  ASSERT_TRUE(png.ok()) << png.status();
  cv::Mat img = cv::imdecode(
      std::vector<unsigned char>(png->begin(), png->end()), cv::IMREAD_COLOR);
  ASSERT_FALSE(img.empty());
  EXPECT_EQ(img.cols, 900);
  // Three panels of 220 rows, 45 apart, under a 50-row heading.
  ASSERT_EQ(img.rows, 50 + 3 * 265 + 10);
  const cv::Vec3b loss(180, 119, 31), speed(14, 127, 255),
      accuracy(44, 160, 44);
  EXPECT_GT(CountColour(img, loss, 50, 270), 100);
  EXPECT_EQ(CountColour(img, loss, 270, img.rows), 0);
  EXPECT_GT(CountColour(img, speed, 315, 535), 100);
  EXPECT_GT(CountColour(img, accuracy, 580, 800), 100);

  // Without evaluations: two panels.
  png = CurvesPng(Curves(30, 0), "t");
  ASSERT_TRUE(png.ok());
  img = cv::imdecode(std::vector<unsigned char>(png->begin(), png->end()),
                     cv::IMREAD_COLOR);
  EXPECT_EQ(img.rows, 50 + 2 * 265 + 10);
}

// Finding: accuracies of 88.6% and 88.8% filled the whole panel, so 0.2
// points looked like a large gain.
TEST(CurvePlotTest, TheAccuracyAxisSpansAtLeastTenPoints) {
  const auto [lo, hi] = AccuracyAxis(88.6, 88.8);
  EXPECT_NEAR(lo, 83.7, 1e-9);
  EXPECT_NEAR(hi, 93.7, 1e-9);
  EXPECT_EQ(AccuracyAxis(40, 90), std::make_pair(40.0, 90.0));
  EXPECT_EQ(AccuracyAxis(99, 99.5), std::make_pair(90.0, 100.0));
  EXPECT_EQ(AccuracyAxis(1, 2), std::make_pair(0.0, 10.0));
}

TEST(CurvePlotTest, NoPointsYetIsAPreconditionNotAnEmptyPicture) {
  absl::StatusOr<std::string> png = CurvesPng(Curves(0, 0), "t");
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(png.status().message().find("job-000009"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::cli
