#include "worker/agent/health_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {

void WriteHealthFile(const std::string& file, const std::string& worker_id,
                     const std::string& state) {
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << absl::ToUnixMillis(absl::Now()) << ' ' << worker_id << ' ' << state
        << '\n';
    if (!out) return;  // the next heartbeat tries again
  }
  std::rename(tmp.c_str(), file.c_str());
}

absl::StatusOr<std::string> CheckWorkerHealth(const std::string& file,
                                              absl::Duration max_age) {
  std::ifstream in(file);
  int64_t written_ms = 0;
  std::string worker_id, state;
  if (!(in >> written_ms >> worker_id >> state)) {
    return absl::NotFoundError(absl::StrCat("no heartbeat answered yet (", file,
                                            " missing or empty)"));
  }
  const absl::Duration age = absl::Now() - absl::FromUnixMillis(written_ms);
  const std::string what = absl::StrCat(
      "worker ", worker_id, " (", state, "): last heartbeat answered ",
      absl::FormatDuration(absl::Trunc(age, absl::Milliseconds(100))), " ago");
  if (age > max_age) {
    return absl::UnavailableError(
        absl::StrCat(what, ", more than ", absl::FormatDuration(max_age)));
  }
  return what;
}

}  // namespace gradsync
