// LaunchLocalRanks: torchrun's process supervision for one host. Starts
// `nproc` copies of a program, rank r with RANK=r, LOCAL_RANK=r,
// WORLD_SIZE=LOCAL_WORLD_SIZE=nproc and the extra `env`, and waits for all.
// When one fails (non-zero exit or a signal), the others get SIGTERM, then
// SIGKILL after `grace`: a run never hangs on a dead rank's peers. SIGINT
// and SIGTERM sent to the launcher are passed on the same way.
//
// Not thread-safe: call from a single-threaded process (it forks).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gradsync {

struct LocalLaunch {
  std::string program;            // path to execute
  std::vector<std::string> argv;  // argv[0] included
  int nproc = 1;
  std::vector<std::pair<std::string, std::string>> env;  // added to each
  absl::Duration grace = absl::Seconds(10);
};

// OK when every rank exited 0. Otherwise INTERNAL naming the first rank
// that failed and how (exit code or signal), or CANCELLED when the launcher
// itself was interrupted; INVALID_ARGUMENT for nproc < 1.
absl::Status LaunchLocalRanks(const LocalLaunch& launch);

}  // namespace gradsync
