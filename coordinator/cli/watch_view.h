// WatchView: folds the JobEvent stream of `gradsync watch` into what the
// terminal shows: a header line (job, state, message), one progress line per
// rank and a footer naming the slowest rank and the bounding phase, plus
// the log lines (state changes, evaluations) to print above it.
// Not thread-safe; one per watch.
#pragma once

#include <string>
#include <vector>

#include "gradsync/v1/job_service.pb.h"

namespace gradsync::cli {

class WatchView {
 public:
  // Applies one event. Returns the log lines it produced (state changes and
  // evaluation results), which scroll above the live block.
  std::vector<std::string> Apply(const v1::JobEvent& event);
  // The live block: header plus rank lines.
  std::vector<std::string> Block() const;
  const v1::Job& job() const { return job_; }

 private:
  v1::Job job_;
  v1::JobMetrics summary_;
  bool have_job_ = false;
};

}  // namespace gradsync::cli
