// MemoryStore: a Store held in this process's memory (store.h). The
// coordinator keeps one per job attempt and serves it to the workers
// (WorkerService Store* RPCs); tests share one between ranks run as
// threads.
//
// Thread-safe. Close() fails every current and future call with its status
// (the job ended, the coordinator is shutting down), waking blocked ones.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store/store.h"

namespace gradsync {

class MemoryStore : public Store {
 public:
  MemoryStore() = default;
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
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> data_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
