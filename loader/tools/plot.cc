#include "loader/tools/plot.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

const cv::Scalar kColors[] = {{180, 119, 31},
                              {14, 127, 255},
                              {44, 160, 44},
                              {40, 39, 214},
                              {189, 103, 148}};

// A "nice" tick step for a range: 1, 2 or 5 times a power of ten.
double TickStep(double range, int ticks) {
  const double raw = range / std::max(ticks, 1);
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

}  // namespace

cv::Mat ErrorBarPlot(const std::vector<ErrorBarSeries>& series,
                     const std::string& title, const std::string& x_label,
                     const std::string& y_label) {
  const int W = 900, H = 620, left = 90, right = 30, top = 80, bottom = 70;
  cv::Mat img(H, W, CV_8UC3, cv::Scalar(255, 255, 255));
  double x0 = 1e300, x1 = -1e300, y1 = 0;
  for (const auto& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y1 = std::max(y1, s.mean[i] + s.stddev[i]);
    }
  }
  if (x0 > x1) x0 = 0, x1 = 1;
  if (x0 == x1) x0 -= 1, x1 += 1;
  const double xpad = (x1 - x0) * 0.05;
  x0 -= xpad;
  x1 += xpad;
  y1 = y1 > 0 ? y1 * 1.1 : 1;
  auto px = [&](double x) {
    return left + static_cast<int>((x - x0) / (x1 - x0) * (W - left - right));
  };
  auto py = [&](double y) {
    return H - bottom - static_cast<int>(y / y1 * (H - top - bottom));
  };
  const auto font = cv::FONT_HERSHEY_SIMPLEX;
  const cv::Scalar black(0, 0, 0), grid(225, 225, 225);
  // Grid, ticks and labels.
  const double ys = TickStep(y1, 8);
  for (double y = 0; y <= y1; y += ys) {
    cv::line(img, {left, py(y)}, {W - right, py(y)}, grid, 1);
    cv::putText(img, absl::StrFormat("%g", y), {8, py(y) + 5}, font, 0.5, black,
                1, cv::LINE_AA);
  }
  const double xs = std::max(1.0, TickStep(x1 - x0, 10));
  for (double x = std::ceil(x0 / xs) * xs; x <= x1; x += xs) {
    cv::line(img, {px(x), H - bottom}, {px(x), H - bottom + 6}, black, 1);
    cv::putText(img, absl::StrFormat("%g", x), {px(x) - 8, H - bottom + 24},
                font, 0.5, black, 1, cv::LINE_AA);
  }
  cv::rectangle(img, {left, top}, {W - right, H - bottom}, black, 1);
  cv::putText(img, title, {left, 35}, font, 0.7, black, 2, cv::LINE_AA);
  cv::putText(img, x_label, {W / 2 - 60, H - 20}, font, 0.6, black, 1,
              cv::LINE_AA);
  cv::putText(img, y_label, {8, top - 12}, font, 0.6, black, 1, cv::LINE_AA);
  // Series: lines, points, error bars with caps, legend.
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const cv::Scalar color = kColors[k % std::size(kColors)];
    for (size_t i = 0; i < s.x.size(); ++i) {
      const int x = px(s.x[i]);
      const int lo = py(std::max(0.0, s.mean[i] - s.stddev[i]));
      const int hi = py(s.mean[i] + s.stddev[i]);
      cv::line(img, {x, lo}, {x, hi}, color, 2, cv::LINE_AA);
      cv::line(img, {x - 6, lo}, {x + 6, lo}, color, 2, cv::LINE_AA);
      cv::line(img, {x - 6, hi}, {x + 6, hi}, color, 2, cv::LINE_AA);
      cv::circle(img, {x, py(s.mean[i])}, 4, color, cv::FILLED, cv::LINE_AA);
      if (i > 0) {
        cv::line(img, {px(s.x[i - 1]), py(s.mean[i - 1])}, {x, py(s.mean[i])},
                 color, 2, cv::LINE_AA);
      }
    }
    const int ly = top + 20 + 22 * static_cast<int>(k);
    cv::line(img, {W - right - 230, ly}, {W - right - 200, ly}, color, 3);
    cv::putText(img, s.label, {W - right - 192, ly + 5}, font, 0.5, black, 1,
                cv::LINE_AA);
  }
  return img;
}

cv::Mat BatchGrid(const at::Tensor& images, int count, int columns) {
  const at::Tensor batch = images.detach().to(torch::kCPU).contiguous();
  const int n = std::min<int>(count, batch.size(0));
  const int c = batch.size(1), h = batch.size(2), w = batch.size(3);
  const int rows = (n + columns - 1) / columns, gap = 2;
  cv::Mat grid(rows * (h + gap) + gap, columns * (w + gap) + gap, CV_8UC3,
               cv::Scalar(255, 255, 255));
  for (int i = 0; i < n; ++i) {
    // CHW float [0, 1] -> HWC 8-bit.
    at::Tensor hwc = (batch[i].clamp(0, 1) * 255)
                         .to(torch::kUInt8)
                         .permute({1, 2, 0})
                         .contiguous();
    cv::Mat tile(h, w, c == 1 ? CV_8UC1 : CV_8UC3, hwc.data_ptr<uint8_t>());
    cv::Mat bgr;
    cv::cvtColor(tile, bgr, c == 1 ? cv::COLOR_GRAY2BGR : cv::COLOR_RGB2BGR);
    const int r = i / columns, col = i % columns;
    bgr.copyTo(
        grid(cv::Rect(gap + col * (w + gap), gap + r * (h + gap), w, h)));
  }
  return grid;
}

}  // namespace gradsync
