#include "coordinator/cli/watch_view.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/cli/format.h"
#include "coordinator/control/job_state.h"

namespace gradsync::cli {

namespace {

std::pair<int64_t, int> NewestTransition(const v1::Job& job) {
  if (job.transitions().empty()) return {0, 0};
  const v1::Transition& t = *job.transitions().rbegin();
  return {t.time_unix_ms(), t.to()};
}

}  // namespace

std::vector<std::string> WatchView::Apply(const v1::JobEvent& event) {
  std::vector<std::string> log;
  if (event.has_summary() && event.summary().ranks_size() > 0) {
    summary_ = event.summary();
  }
  switch (event.event_case()) {
    case v1::JobEvent::kJob: {
      // A new transition, by its time and state (events carry the newest
      // transitions only: their count says nothing).
      const bool changed =
          !have_job_ || event.job().state() != job_.state() ||
          NewestTransition(event.job()) != NewestTransition(job_);
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

namespace {

// When the job first started running (its creation if it never did).
int64_t StartedMs(const v1::Job& job) {
  for (const v1::Transition& t : job.transitions()) {
    if (t.to() == v1::JOB_STATE_RUNNING) return t.time_unix_ms();
  }
  return job.created_unix_ms();
}

}  // namespace

std::vector<std::string> WatchView::Block(int64_t now_ms, int width) const {
  std::vector<std::string> lines;
  if (!have_job_) return lines;
  // What matters most comes first: a narrow terminal cuts the end.
  std::string header = absl::StrCat(job_.id(), " ", StateName(job_.state()));
  if (job_.state() == v1::JOB_STATE_RUNNING && now_ms > 0) {
    // ETA from the slowest rank's progress over the time spent running.
    const int64_t elapsed = now_ms - StartedMs(job_);
    double done = summary_.ranks_size() > 0 ? 1.0 : 0.0;
    for (const v1::RankMetrics& r : summary_.ranks()) {
      done = std::min(done, RankProgress(job_, r.last()));
    }
    absl::StrAppend(&header, ", ", FormatDuration(elapsed), " elapsed");
    if (done >= 0.01) {
      absl::StrAppend(
          &header, ", ETA ",
          FormatDuration(static_cast<int64_t>(elapsed * (1 - done) / done)));
    }
  }
  absl::StrAppend(&header, " | ", job_.world_size(), " rank(s), ",
                  job_.spec().model(), ", ", job_.spec().name());
  lines.push_back(std::move(header));
  for (std::string& line : FormatRankLines(job_, summary_)) {
    lines.push_back(absl::StrCat("  ", line));
  }
  for (std::string& line : lines) line = FitWidth(TerminalSafe(line), width);
  return lines;
}

std::vector<std::string> WatchView::Summary() const {
  std::vector<std::string> lines;
  if (!have_job_ || !IsTerminal(job_.state())) return lines;
  std::string result =
      absl::StrCat(job_.id(), " ", StateName(job_.state()), " after ",
                   FormatDuration(job_.updated_unix_ms() - StartedMs(job_)));
  const auto& evals = job_.metrics().eval();
  if (!evals.empty()) {
    const v1::EvalMetrics& e = evals[evals.size() - 1];
    absl::StrAppend(
        &result,
        absl::StrFormat(": test accuracy %.2f%%, loss %.4f (epoch "
                        "%d of %d, %d samples)",
                        100 * e.accuracy(), e.loss(), e.epoch() + 1,
                        std::max(job_.spec().epochs(), 1), e.samples()));
  } else if (job_.state() != v1::JOB_STATE_SUCCEEDED) {
    absl::StrAppend(&result, ": ", job_.message());
  }
  lines.push_back(TerminalSafe(result));
  if (job_.state() == v1::JOB_STATE_SUCCEEDED) {
    lines.push_back(absl::StrCat("weights: gradsync model pull ", job_.id(),
                                 " --state-dict -o model.pt"));
  } else {
    lines.push_back(absl::StrCat("why: gradsync status ", job_.id(),
                                 "; gradsync logs ", job_.id()));
  }
  return lines;
}

}  // namespace gradsync::cli
