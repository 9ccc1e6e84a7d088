// MemoryBudget: a byte allowance that several users draw from and give back
// to (the decoded-sample caches of one worker process share one), and the
// host's physical memory that default budgets are a share of.
//
// Thread-safe: TryCharge and Release may be called from any thread.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace gradsync {

// This host's physical memory in bytes.
inline int64_t PhysicalMemoryBytes() {
  return static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) *
         ::sysconf(_SC_PAGESIZE);
}

class MemoryBudget {
 public:
  // `limit_bytes` <= 0: nothing can be charged.
  explicit MemoryBudget(int64_t limit_bytes) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Takes `bytes` if they fit under the limit with what is already taken;
  // false (and nothing taken) otherwise.
  bool TryCharge(int64_t bytes) {
    int64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes < 0 || used + bytes > limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes,
                                          std::memory_order_relaxed));
    return true;
  }
  // Gives back bytes an earlier TryCharge took.
  void Release(int64_t bytes) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  int64_t limit() const { return limit_; }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> used_{0};
};

}  // namespace gradsync
