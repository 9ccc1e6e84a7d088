// MemoryStore: a Store held in this process's memory (store.h). The
// coordinator keeps one per job attempt and serves it to the workers
// (WorkerService Store* RPCs); tests share one between ranks run as
// threads.
//
// Thread-safe. Close() fails every current and future call with its status
// (the job ended, the coordinator is shutting down), waking blocked ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "foundation/store/store.h"

namespace gradsync {

// Bounds on what writers may put in one store; a write past them fails
// with RESOURCE_EXHAUSTED naming the bound. The coordinator bounds each job
// attempt's store (a worker cannot fill its memory).
struct MemoryStoreLimits {
  size_t max_keys = SIZE_MAX;
  size_t max_bytes = SIZE_MAX;  // keys and values together
};

class MemoryStore : public Store {
 public:
  explicit MemoryStore(MemoryStoreLimits limits = {}) : limits_(limits) {}
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;

  size_t Size() const;
  // `status` must not be OK; the first close wins.
  void Close(absl::Status status);

 private:
  // OK when `key` may hold `value_size` bytes within the limits.
  absl::Status CheckRoom(const std::string& key, size_t value_size) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void PutLocked(const std::string& key, std::string value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MemoryStoreLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> data_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
