// Pictures for people: an error-bar plot (PNG) of a timing sweep and a grid
// of a batch's images. Drawn with OpenCV; pure functions, thread-safe.
#pragma once

#include <ATen/core/Tensor.h>

#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace gradsync {

struct ErrorBarSeries {
  std::string label;
  std::vector<double> x, mean, stddev;
};

// A line plot with +-stddev error bars per point (BGR image).
cv::Mat ErrorBarPlot(const std::vector<ErrorBarSeries>& series,
                     const std::string& title, const std::string& x_label,
                     const std::string& y_label);

// The first `count` images of a [B, C, H, W] float batch in [0, 1] as a
// grid with `columns` columns (BGR image, 2-pixel gaps).
cv::Mat BatchGrid(const at::Tensor& images, int count, int columns);

}  // namespace gradsync
