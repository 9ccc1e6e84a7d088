// PrometheusText: writes Prometheus's text exposition format (version
// 0.0.4): for each metric family a # HELP and a # TYPE line, then its
// samples, `name{label="value",...} number`. Label values are escaped
// (backslash, double quote, newline); numbers are written as integers when
// they are whole, "NaN" and "+Inf"/"-Inf" as Prometheus spells them.
//
// Families must be added one at a time, all of a family's samples after its
// Family() call. Not thread-safe (one per page).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace gradsync {

using PrometheusLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // `type`: "gauge", "counter", "histogram" or "summary".
  void Family(absl::string_view name, absl::string_view type,
              absl::string_view help);
  // A sample of the current family; `suffix` is appended to its name
  // ("_bucket", "_sum", "_count" for histograms).
  void Sample(const PrometheusLabels& labels, double value,
              absl::string_view suffix = "");

  const std::string& text() const { return text_; }

 private:
  std::string family_;
  std::string text_;
};

// A label value escaped for the text format.
std::string EscapeLabelValue(absl::string_view value);
// A sample value as the text format writes it.
std::string FormatSampleValue(double value);

}  // namespace gradsync
