#include "worker/train/step_profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "loader/exception_status.h"

namespace gradsync {
namespace {

namespace kineto = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// An event's duration in microseconds. LibTorch 2.x has durationNs();
// 1.13 (Debian's) has durationUs() only.
template <typename Event>
auto DurationUs(const Event& e, int) -> decltype(e.durationNs(), uint64_t()) {
  return e.durationNs() / 1000;
}
template <typename Event>
uint64_t DurationUs(const Event& e, long) {
  return e.durationUs();
}

struct Total {
  int64_t calls = 0;
  uint64_t us = 0;
};

}  // namespace

absl::StatusOr<ProfileWindow> ParseProfileSteps(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  ProfileWindow w;
  const bool parsed = (parts.size() == 1 || parts.size() == 2) &&
                      absl::SimpleAtoi(parts[0], &w.first_step) &&
                      absl::SimpleAtoi(parts.back(), &w.last_step);
  if (!parsed || w.first_step < 1 || w.last_step < w.first_step) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile steps \"", text,
                     "\": expected A:B with 1 <= A <= B (or one step A)"));
  }
  return w;
}

StepProfiler::StepProfiler(ProfileWindow window, torch::Device device)
    : window_(std::move(window)), device_(device) {}

StepProfiler::~StepProfiler() {
  // The run failed or ended inside the window.
  if (started_at_ > 0) Stop(/*wait_for_device=*/false).IgnoreError();
}

void StepProfiler::BeforeStep(int64_t step) {
  if (!window_.enabled() || started_at_ > 0 || step != window_.first_step) {
    return;
  }
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  std::set<impl::ActivityType> activities = {impl::ActivityType::CPU};
  if (device_.is_cuda()) activities.insert(impl::ActivityType::CUDA);
  kineto::prepareProfiler(config, activities);
  kineto::enableProfiler(config, activities);
  started_at_ = step;
  last_seen_ = step - 1;
}

bool StepProfiler::EndsAt(int64_t step) const {
  return started_at_ > 0 && step >= window_.last_step;
}

absl::Status StepProfiler::AfterStep(int64_t step) {
  if (started_at_ == 0) return absl::OkStatus();
  last_seen_ = step;
  return EndsAt(step) ? Stop(/*wait_for_device=*/true) : absl::OkStatus();
}

absl::Status StepProfiler::Stop(bool wait_for_device) {
  // The GPU may still run the window's work: what it has not run yet has
  // not been recorded.
  if (wait_for_device && device_.is_cuda()) {
    torch::cuda::synchronize(device_.index());
  }
  std::unique_ptr<kineto::ProfilerResult> result = kineto::disableProfiler();
  const int64_t first = started_at_;
  started_at_ = 0;
  std::map<std::pair<std::string, std::string>, Total> totals;
  for (const kineto::KinetoEvent& e : result->events()) {
    Total& t = totals[{c10::DeviceTypeName(e.deviceType(), /*lower_case=*/true),
                       e.name()}];
    ++t.calls;
    t.us += DurationUs(e, 0);
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Total>> rows(
      totals.begin(), totals.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.us > b.second.us;
  });
  // Debian's LibTorch has no Kineto and refuses to save a trace; the table
  // is the profile there, and its header says why there is no trace.
  const std::string trace = window_.out_prefix + ".trace.json";
  const absl::Status saved = GuardExceptions("saving the profile trace", [&]() {
    result->save(trace);
    return absl::OkStatus();
  });
  const std::string table = window_.out_prefix + ".ops.tsv";
  std::ofstream out(table);
  out << "# steps " << first << "-" << last_seen_ << " ("
      << last_seen_ - first + 1 << " steps) on " << device_.str() << "\n"
      << "# "
      << (saved.ok() ? "trace " + trace : "no trace: " + saved.ToString())
      << "\n"
      << "device\tcalls\ttotal_us\tname\n";
  for (const auto& [key, t] : rows) {
    out << key.first << '\t' << t.calls << '\t' << t.us << '\t' << key.second
        << '\n';
  }
  out.close();
  if (!out) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write the profile table ", table));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
