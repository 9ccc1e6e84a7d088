// JobPersister: writes job records and worker keys to a JobStore on its own
// thread, so that no caller (the coordinator, under its one lock) waits for
// a database write: a slow or locked disk must not delay heartbeats.
//
// Writes are coalesced: per job the latest record wins and a delete
// supersedes a pending save; per worker the latest key. A write that fails
// stays queued (unless something newer replaced it) and is retried after a
// backoff (`first_retry`, doubling up to `max_retry`), so nothing is dropped
// while the store recovers. `listener` hears each failed job write, and the
// first success after failures, on the persister's thread with no lock of
// the persister held (it may take its caller's locks).
//
// Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/persist/job_store.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/metrics.pb.h"

namespace gradsync {

class JobPersister {
 public:
  // job_id is empty for a worker key's write.
  using Listener =
      std::function<void(const std::string& job_id, const absl::Status& s)>;

  // `store` must outlive the persister.
  JobPersister(JobStore* store, Listener listener,
               absl::Duration first_retry = absl::Seconds(1),
               absl::Duration max_retry = absl::Seconds(30));
  // Stop(absl::Seconds(5)).
  ~JobPersister();
  JobPersister(const JobPersister&) = delete;
  JobPersister& operator=(const JobPersister&) = delete;

  void Save(const v1::Job& job);
  // The job's curve and newest log lines (coalesced like records; written
  // after its record).
  void SaveTrail(const std::string& job_id, v1::JobTrail trail);
  // Also drops a pending trail.
  void Delete(const std::string& job_id);
  void SaveWorkerKey(const std::string& worker_id, const std::string& key);

  // Waits until everything queued before the call is written, or `timeout`
  // passes: DEADLINE_EXCEEDED then, naming how many writes are left.
  absl::Status Flush(absl::Duration timeout);
  // Flush(timeout), then stops the thread; later writes are dropped with a
  // log line. Idempotent.
  void Stop(absl::Duration timeout);

 private:
  void Loop();
  // Writes one batch outside the lock; puts failures back.
  bool WriteBatch(std::map<std::string, std::optional<v1::Job>> jobs,
                  std::map<std::string, std::string> keys,
                  std::map<std::string, v1::JobTrail> trails);
  size_t PendingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return jobs_.size() + keys_.size() + trails_.size() + in_flight_;
  }

  JobStore* const store_;
  const Listener listener_;
  const absl::Duration first_retry_;
  const absl::Duration max_retry_;

  absl::Mutex mu_;
  // nullopt = delete.
  std::map<std::string, std::optional<v1::Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::JobTrail> trails_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // writes being made now
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Only the persister's thread touches it: jobs whose last write failed.
  std::set<std::string> failing_;
  std::thread thread_;
};

}  // namespace gradsync
