#include "coordinator/http/prometheus_text.h"

#include <gtest/gtest.h>

#include <limits>

namespace gradsync {
namespace {

TEST(PrometheusTextTest, FamilyThenSamples) {
  PrometheusText out;
  out.Family("gradsync_jobs", "gauge", "Jobs by state.");
  out.Sample({{"state", "RUNNING"}}, 2);
  out.Sample({}, 0.5);
  out.Family("gradsync_rpc", "histogram", "Latency.");
  out.Sample({{"le", "+Inf"}}, 3, "_bucket");
  EXPECT_EQ(out.text(),
            "# HELP gradsync_jobs Jobs by state.\n"
            "# TYPE gradsync_jobs gauge\n"
            "gradsync_jobs{state=\"RUNNING\"} 2\n"
            "gradsync_jobs 0.5\n"
            "# HELP gradsync_rpc Latency.\n"
            "# TYPE gradsync_rpc histogram\n"
            "gradsync_rpc_bucket{le=\"+Inf\"} 3\n");
}

TEST(PrometheusTextTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  PrometheusText out;
  out.Family("m", "gauge", "two\nlines \\ here");
  EXPECT_EQ(out.text(), "# HELP m two\\nlines \\\\ here\n# TYPE m gauge\n");
}

TEST(PrometheusTextTest, FormatsNumbersAsPrometheusReadsThem) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(123456789012), "123456789012");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
  EXPECT_EQ(FormatSampleValue(0.0025), "0.0025");
  EXPECT_EQ(FormatSampleValue(1.0 / 3), "0.33333333333333331");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
}

}  // namespace
}  // namespace gradsync
