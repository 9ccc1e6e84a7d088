// CoordinatorProcess: a `gradsync-coordinator` started as a child process on
// a free loopback port, so a benchmark drives it over gRPC as a cluster
// would and can read what the coordinator alone costs (CPU time, resident
// memory, threads) from /proc, apart from the load generator's own threads.
//
// Thread-compatible: one owner starts, reads and stops it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::bench {

// What the process has used so far.
struct ProcessUse {
  double cpu_seconds = 0;      // user + system
  int64_t rss_bytes = 0;       // resident now
  int64_t peak_rss_bytes = 0;  // high-water mark
  int threads = 0;
};

class CoordinatorProcess {
 public:
  // Runs `binary --listen 127.0.0.1:0 args...` with its stderr in a
  // temporary log file and waits up to 30 s for the port it listens on.
  static absl::StatusOr<std::unique_ptr<CoordinatorProcess>> Start(
      const std::string& binary, const std::vector<std::string>& args);
  // SIGTERM, SIGKILL after 10 s, reaped; the log file is removed.
  ~CoordinatorProcess();
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  // From /proc/<pid>/stat and /proc/<pid>/status.
  absl::StatusOr<ProcessUse> Use() const;

 private:
  CoordinatorProcess(pid_t pid, std::string log) : pid_(pid), log_(log) {}

  const pid_t pid_;
  const std::string log_;
  std::string address_;
};

// `gradsync-coordinator` beside the running executable (build/bin/).
std::string CoordinatorBesideSelf();

}  // namespace gradsync::bench
