#include "coordinator/cli/watch_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/cli/format.h"

namespace gradsync::cli {

std::vector<std::string> WatchView::Apply(const v1::JobEvent& event) {
  std::vector<std::string> log;
  if (event.has_summary() && event.summary().ranks_size() > 0) {
    summary_ = event.summary();
  }
  switch (event.event_case()) {
    case v1::JobEvent::kJob: {
      const bool changed =
          !have_job_ || event.job().state() != job_.state() ||
          event.job().transitions_size() != job_.transitions_size();
      job_ = event.job();
      have_job_ = true;
      if (changed) {
        log.push_back(absl::StrCat(job_.id(), " ", StateName(job_.state()),
                                   ": ", job_.message()));
      }
      if (job_.metrics().ranks_size() > 0) summary_ = job_.metrics();
      break;
    }
    case v1::JobEvent::kEval:
      log.push_back(absl::StrFormat(
          "%s epoch %d: test accuracy %.2f%%, loss %.4f (%d samples)",
          job_.id(), event.eval().epoch() + 1, 100 * event.eval().accuracy(),
          event.eval().loss(), event.eval().samples()));
      break;
    default:
      break;
  }
  for (std::string& line : log) line = TerminalSafe(line);
  return log;
}

std::vector<std::string> WatchView::Block() const {
  std::vector<std::string> lines;
  if (!have_job_) return lines;
  lines.push_back(absl::StrCat(job_.id(), " (", job_.spec().name(), ") ",
                               StateName(job_.state()), ", ", job_.world_size(),
                               " rank(s), model ", job_.spec().model()));
  for (std::string& line : FormatRankLines(job_, summary_)) {
    lines.push_back(absl::StrCat("  ", line));
  }
  for (std::string& line : lines) line = TerminalSafe(line);
  return lines;
}

}  // namespace gradsync::cli
