#include "worker/train/host_tensor_limit.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "loader/memory_budget.h"

namespace gradsync {
namespace {

std::atomic<int64_t> in_use{0};
std::atomic<int64_t> limit{0};

double Mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

void CountedDelete(void* data) {
  if (data == nullptr) return;
  in_use.fetch_sub(static_cast<int64_t>(malloc_usable_size(data)));
  c10::free_cpu(data);
}

// LibTorch's default CPU allocation (64-byte aligned, c10::alloc_cpu) with
// every byte counted. The data pointer is its own context, as the default
// allocator's is, so raw_allocate/raw_deleter keep working; the size freed
// is malloc_usable_size's, the same on both sides.
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) const override {
    const auto request = static_cast<int64_t>(nbytes);
    const int64_t cap = limit.load();
    const int64_t before = in_use.fetch_add(request);
    if (cap > 0 && before + request > cap) {
      in_use.fetch_sub(request);
      TORCH_CHECK(false, absl::StrFormat(
                             "out of memory: a CPU tensor of %.1f MiB would "
                             "take this worker's tensors to %.1f MiB, over "
                             "its memory limit of %.1f MiB (--memory-limit-mb)",
                             Mib(request), Mib(before + request), Mib(cap)));
    }
    void* data = nullptr;
    try {
      data = c10::alloc_cpu(nbytes);
    } catch (...) {
      in_use.fetch_sub(request);
      throw;
    }
    const auto usable =
        data == nullptr ? 0 : static_cast<int64_t>(malloc_usable_size(data));
    in_use.fetch_add(usable - request);
    return {data, data, &CountedDelete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &CountedDelete; }
};

// The cgroup's memory limit (v2, then v1), or 0 when there is none.
int64_t CgroupLimit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text)) continue;
    int64_t bytes = 0;
    if (absl::SimpleAtoi(text, &bytes) && bytes > 0) return bytes;
  }
  return 0;
}

}  // namespace

void LimitHostTensorMemory(int64_t limit_bytes) {
  limit.store(std::max<int64_t>(0, limit_bytes));
  static std::once_flag installed;
  std::call_once(installed, [] {
    // Priority 1: over the default allocator's registration (0).
    c10::SetCPUAllocator(new CountingAllocator, /*priority=*/1);
  });
}

int64_t HostTensorBytesInUse() { return in_use.load(); }

int64_t DefaultHostTensorLimit(int processes) {
  int64_t memory = PhysicalMemoryBytes();
  const int64_t cgroup = CgroupLimit();
  if (cgroup > 0) memory = std::min(memory, cgroup);
  return memory / 10 * 8 / std::max(1, processes);
}

}  // namespace gradsync
