// CanShareMemory: whether this machine lets a process create POSIX shared
// memory (a container may have no usable /dev/shm), for tests that skip
// the shared-memory all-reduce where it cannot run; GlooTransportScope: which
// transport the gloo all-reduces of communicators made in its lifetime take.
// Header-only. CanShareMemory is thread-safe (each call uses a name of its
// own); GlooTransportScope sets the environment, so only the test's main
// thread may hold one.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>

namespace gradsync {

inline bool CanShareMemory() {
  static std::atomic<int> probes{0};
  const std::string name = "/gradsync_probe_" + std::to_string(getpid()) + "_" +
                           std::to_string(probes++);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return false;
  close(fd);
  shm_unlink(name.c_str());
  return true;
}

// Sets GRADSYNC_GLOO_SHM for its lifetime (shared memory where every rank
// can join it, or TCP), then restores it; rank processes started meanwhile
// (rank_processes.h) inherit it.
class GlooTransportScope {
 public:
  explicit GlooTransportScope(bool shared_memory) {
    if (const char* v = getenv(kVar)) saved_ = v;
    setenv(kVar, shared_memory ? "1" : "0", 1);
  }
  ~GlooTransportScope() {
    if (saved_) {
      setenv(kVar, saved_->c_str(), 1);
    } else {
      unsetenv(kVar);
    }
  }
  GlooTransportScope(const GlooTransportScope&) = delete;
  GlooTransportScope& operator=(const GlooTransportScope&) = delete;

 private:
  static constexpr char kVar[] = "GRADSYNC_GLOO_SHM";
  std::optional<std::string> saved_;
};

}  // namespace gradsync
