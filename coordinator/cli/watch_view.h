// WatchView: folds the JobEvent stream of `gradsync watch` into what the
// terminal shows: a header line (job, state, elapsed time, ETA), one
// progress line per rank and a footer naming the slowest rank and the
// bounding phase, each cut to the terminal's width so a redraw clears what
// it drew; the log lines (state changes, evaluations) to print above it;
// and, once the job ends, a summary with its result.
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
  // The live block at `now_ms`: header plus rank lines, each at most
  // `width` columns (0: uncut).
  std::vector<std::string> Block(int64_t now_ms = 0, int width = 0) const;
  // How the job ended (empty while it runs): state, time taken, the last
  // evaluation, and what to run next (pull the weights, or read the logs).
  std::vector<std::string> Summary() const;
  const v1::Job& job() const { return job_; }

 private:
  v1::Job job_;
  v1::JobMetrics summary_;
  bool have_job_ = false;
};

}  // namespace gradsync::cli
