// CanShareMemory: whether this machine lets a process create POSIX shared
// memory (a container may have no usable /dev/shm), for tests that skip
// the shared-memory all-reduce where it cannot run. Header-only;
// thread-safe (each call uses a name of its own).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
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

}  // namespace gradsync
