// A job's curves (JobService.GetJobCurves) as files people look at:
// a PNG of three panels against the global step (training loss, the
// job's samples/s, and evaluation accuracy at the end of each evaluated
// epoch), or a CSV of the same points.
// Thread-compatible: pure functions of their arguments (and the file).
#pragma once

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "gradsync/v1/metrics.pb.h"

namespace gradsync::cli {

// Whether this build can draw PNGs (it needs OpenCV); CSV always works.
bool CanPlotPng();

// The PNG file's bytes; `title` heads it. FAILED_PRECONDITION when the
// job has no points yet; UNIMPLEMENTED in a build without OpenCV.
absl::StatusOr<std::string> CurvesPng(const v1::JobCurves& curves,
                                      const std::string& title);

// "kind,step,epoch,loss,samples_per_sec,accuracy" rows: one "train" row per
// curve point, one "eval" row per evaluation (its step: the epoch's last
// training point, empty when the curve has none of that epoch).
std::string CurvesCsv(const v1::JobCurves& curves);

// The step at which `epoch` ended on the curve (its last point of that
// epoch), or -1.
int64_t EpochEndStep(const v1::JobCurves& curves, int epoch);

// The accuracy panel's y range (percent) for data in [lo, hi]: at least 10
// points wide and within [0, 100], so that 0.2 points does not look large.
std::pair<double, double> AccuracyAxis(double lo, double hi);

}  // namespace gradsync::cli
