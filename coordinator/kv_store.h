// KvStore: the key-value store of one job attempt, with c10d Store semantics
// (set, blocking get, atomic add, wait for keys). Workers use it through the
// WorkerService Store* RPCs to bootstrap gloo and NCCL.
//
// Thread-safe. Blocking calls wait at most until their deadline, and return
// early with the close status once Close() is called (job ended, coordinator
// shutting down).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class KvStore {
 public:
  KvStore() = default;
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  absl::Status Set(const std::string& key, std::string value);
  // Waits until `key` exists; DEADLINE_EXCEEDED names the key.
  absl::StatusOr<std::string> Get(const std::string& key, absl::Time deadline);
  // Adds `delta` to the decimal integer stored at `key` (0 when absent) and
  // returns the new value. INVALID_ARGUMENT when the value is not an integer.
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta);
  // Waits until every key exists; DEADLINE_EXCEEDED names the missing keys.
  absl::Status Wait(const std::vector<std::string>& keys, absl::Time deadline);
  size_t Size() const;

  // Fails every current and future call with `status` (must not be OK).
  void Close(absl::Status status);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> data_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
