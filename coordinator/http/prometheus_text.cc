#include "coordinator/http/prometheus_text.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {

void PrometheusText::Family(absl::string_view name, absl::string_view type,
                            absl::string_view help) {
  family_ = std::string(name);
  std::string escaped_help;
  for (char c : help) {
    if (c == '\\') {
      escaped_help += "\\\\";
    } else if (c == '\n') {
      escaped_help += "\\n";
    } else {
      escaped_help += c;
    }
  }
  absl::StrAppend(&text_, "# HELP ", name, " ", escaped_help, "\n", "# TYPE ",
                  name, " ", type, "\n");
}

void PrometheusText::Sample(const PrometheusLabels& labels, double value,
                            absl::string_view suffix) {
  absl::StrAppend(&text_, family_, suffix);
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      absl::StrAppend(&text_, labels[i].first, "=\"",
                      EscapeLabelValue(labels[i].second), "\"");
    }
    text_ += '}';
  }
  absl::StrAppend(&text_, " ", FormatSampleValue(value), "\n");
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers up to 2^53 (steps, bytes, counts) exactly.
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest of 15 or 17 significant digits that reads back exactly.
  std::string short_form = absl::StrFormat("%.15g", value);
  if (std::strtod(short_form.c_str(), nullptr) == value) return short_form;
  return absl::StrFormat("%.17g", value);
}

}  // namespace gradsync
