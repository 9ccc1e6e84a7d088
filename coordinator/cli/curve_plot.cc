#include "coordinator/cli/curve_plot.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#ifdef GRADSYNC_CLI_PNG
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace gradsync::cli {

int64_t EpochEndStep(const v1::JobCurves& curves, int epoch) {
  int64_t step = -1;
  for (const v1::CurvePoint& p : curves.train()) {
    if (p.epoch() == epoch) step = std::max(step, p.step());
  }
  return step;
}

std::string CurvesCsv(const v1::JobCurves& curves) {
  std::string out = "kind,step,epoch,loss,samples_per_sec,accuracy\n";
  for (const v1::CurvePoint& p : curves.train()) {
    // Epochs counted from 1, as status, watch and the logs count them.
    absl::StrAppend(&out, "train,", p.step(), ",", p.epoch() + 1, ",",
                    absl::StrFormat("%.6g,%.6g", p.loss(), p.samples_per_sec()),
                    ",\n");
  }
  for (const v1::EvalMetrics& e : curves.eval()) {
    int64_t step = EpochEndStep(curves, e.epoch());
    absl::StrAppend(&out, "eval,", step < 0 ? "" : absl::StrCat(step), ",",
                    e.epoch() + 1, ",", absl::StrFormat("%.6g", e.loss()), ",,",
                    absl::StrFormat("%.6g", e.accuracy()), "\n");
  }
  return out;
}

std::pair<double, double> AccuracyAxis(double lo, double hi) {
  constexpr double kMinSpan = 10;  // percentage points
  if (hi - lo < kMinSpan) {
    const double mid = (lo + hi) / 2;
    lo = mid - kMinSpan / 2;
    hi = mid + kMinSpan / 2;
    if (lo < 0) hi -= lo, lo = 0;
    if (hi > 100) lo -= hi - 100, hi = 100;
  }
  return {std::max(lo, 0.0), std::min(hi, 100.0)};
}

#ifndef GRADSYNC_CLI_PNG

bool CanPlotPng() { return false; }

absl::StatusOr<std::string> CurvesPng(const v1::JobCurves&,
                                      const std::string&) {
  return absl::UnimplementedError(
      "this gradsync was built without OpenCV, so it cannot draw a PNG; "
      "write a .csv instead");
}

#else

bool CanPlotPng() { return true; }

namespace {

struct Series {
  std::vector<double> x, y;
};

// A round tick spacing (1, 2 or 5 times a power of ten) giving about
// `ticks` intervals over [lo, hi].
double NiceStep(double lo, double hi, int ticks) {
  double raw = (hi - lo) / ticks;
  if (!(raw > 0)) return 1;
  double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

std::string TickLabel(double v, double step) {
  if (std::fabs(v) >= 10000) return absl::StrFormat("%.0fk", v / 1000);
  int decimals =
      step >= 1 ? 0 : static_cast<int>(-std::floor(std::log10(step)));
  return absl::StrFormat("%.*f", decimals, v);
}

const cv::Scalar kInk(40, 40, 40), kGrid(225, 225, 225);

// One panel: axes with round ticks, grid, the series as a line (and dots
// when `dots`), the name above its top left (never on the line). The y
// axis spans [y_lo, y_hi] of the data, or `y_range` when given.
void DrawPanel(cv::Mat& img, const cv::Rect& r, const std::string& name,
               const Series& s, double x_lo, double x_hi, cv::Scalar color,
               bool dots, bool y_from_zero,
               std::optional<std::pair<double, double> > y_range = {}) {
  double y_lo = *std::min_element(s.y.begin(), s.y.end());
  double y_hi = *std::max_element(s.y.begin(), s.y.end());
  if (y_range) std::tie(y_lo, y_hi) = *y_range;
  if (y_from_zero) y_lo = std::min(0.0, y_lo);
  if (y_hi - y_lo < 1e-12) {
    y_hi += 0.5;
    y_lo -= 0.5;
  }
  double ystep = NiceStep(y_lo, y_hi, 5);
  y_lo = std::floor(y_lo / ystep) * ystep;
  y_hi = std::ceil(y_hi / ystep) * ystep;
  double xstep = NiceStep(x_lo, x_hi, 8);
  auto px = [&](double x) {
    return r.x + static_cast<int>((x - x_lo) / (x_hi - x_lo) * r.width);
  };
  auto py = [&](double y) {
    return r.y + r.height -
           static_cast<int>((y - y_lo) / (y_hi - y_lo) * r.height);
  };
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  for (double y = y_lo; y <= y_hi + ystep / 2; y += ystep) {
    cv::line(img, {r.x, py(y)}, {r.x + r.width, py(y)}, kGrid, 1);
    std::string label = TickLabel(y, ystep);
    int baseline = 0;
    cv::Size size = cv::getTextSize(label, font, 0.4, 1, &baseline);
    cv::putText(img, label, {r.x - size.width - 6, py(y) + 4}, font, 0.4, kInk,
                1, cv::LINE_AA);
  }
  for (double x = std::ceil(x_lo / xstep) * xstep; x <= x_hi; x += xstep) {
    cv::line(img, {px(x), r.y}, {px(x), r.y + r.height}, kGrid, 1);
    std::string label = TickLabel(x, xstep);
    int baseline = 0;
    cv::Size size = cv::getTextSize(label, font, 0.4, 1, &baseline);
    cv::putText(img, label, {px(x) - size.width / 2, r.y + r.height + 16}, font,
                0.4, kInk, 1, cv::LINE_AA);
  }
  cv::rectangle(img, r, kInk, 1);
  std::vector<cv::Point> line;
  for (size_t i = 0; i < s.x.size(); ++i) {
    line.emplace_back(px(s.x[i]), py(s.y[i]));
  }
  cv::polylines(img, line, false, color, 2, cv::LINE_AA);
  if (dots) {
    for (const cv::Point& p : line) {
      cv::circle(img, p, 4, color, cv::FILLED, cv::LINE_AA);
    }
  }
  cv::putText(img, name, {r.x, r.y - 7}, font, 0.5, kInk, 1, cv::LINE_AA);
}

}  // namespace

absl::StatusOr<std::string> CurvesPng(const v1::JobCurves& curves,
                                      const std::string& title) {
  if (curves.train_size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(curves.job_id(), " has no training steps reported yet"));
  }
  Series loss, speed, accuracy;
  for (const v1::CurvePoint& p : curves.train()) {
    loss.x.push_back(p.step());
    loss.y.push_back(p.loss());
    speed.x.push_back(p.step());
    speed.y.push_back(p.samples_per_sec());
  }
  for (const v1::EvalMetrics& e : curves.eval()) {
    int64_t step = EpochEndStep(curves, e.epoch());
    if (step < 0) continue;
    accuracy.x.push_back(step);
    accuracy.y.push_back(100 * e.accuracy());
  }
  double x_lo = 0, x_hi = loss.x.back();
  if (x_hi <= x_lo) x_hi = x_lo + 1;

  const int width = 900, panel_h = 220, left = 70, right = 20, top = 50,
            gap = 45;
  const int panels = accuracy.x.empty() ? 2 : 3;
  const int height = top + panels * (panel_h + gap) + 10;
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(255, 255, 255));
  cv::putText(img, title, {left, 30}, cv::FONT_HERSHEY_SIMPLEX, 0.7, kInk, 2,
              cv::LINE_AA);
  auto panel = [&](int i) {
    return cv::Rect(left, top + i * (panel_h + gap), width - left - right,
                    panel_h);
  };
  // Colours are BGR.
  DrawPanel(img, panel(0), "training loss (rank 0)", loss, x_lo, x_hi,
            cv::Scalar(180, 119, 31), false, true);
  DrawPanel(img, panel(1), "samples/s (all ranks)", speed, x_lo, x_hi,
            cv::Scalar(14, 127, 255), false, true);
  if (!accuracy.x.empty()) {
    DrawPanel(
        img, panel(2), "evaluation accuracy, % (end of each epoch)", accuracy,
        x_lo, x_hi, cv::Scalar(44, 160, 44), true, false,
        AccuracyAxis(*std::min_element(accuracy.y.begin(), accuracy.y.end()),
                     *std::max_element(accuracy.y.begin(), accuracy.y.end())));
  }
  cv::putText(img, "global step", {width / 2 - 40, height - 6},
              cv::FONT_HERSHEY_SIMPLEX, 0.45, kInk, 1, cv::LINE_AA);

  std::vector<unsigned char> png;
  if (!cv::imencode(".png", img, png)) {
    return absl::InternalError("cannot encode the plot as PNG");
  }
  return std::string(png.begin(), png.end());
}

#endif  // GRADSYNC_CLI_PNG

}  // namespace gradsync::cli
