// JobStore: durable job records. SqliteJobStore keeps them in
// <state_dir>/gradsync.db (tables `jobs`, `transitions`, `trails` and
// `worker_keys`), so a restarted coordinator still lists past jobs, their
// transitions and final metrics, plots their curves and shows their newest
// log lines, and re-adopts the workers of running jobs.
//
// SqliteJobStore is thread-safe (one connection behind a mutex).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/metrics.pb.h"

struct sqlite3;

namespace gradsync {

class JobStore {
 public:
  virtual ~JobStore() = default;
  // Inserts or replaces the job record and appends transitions not yet
  // stored. All or nothing: a failed save leaves the store as it was and
  // the next save works.
  virtual absl::Status Save(const v1::Job& job) = 0;
  // Removes a job's record, transitions and trail (OK if there are none).
  virtual absl::Status Delete(const std::string& job_id) = 0;
  // Replaces the job's trail (its curve and newest log lines).
  virtual absl::Status SaveTrail(const std::string& job_id,
                                 const v1::JobTrail& trail) = 0;
  // Every stored trail, by job id.
  virtual absl::StatusOr<std::map<std::string, v1::JobTrail>> LoadTrails() = 0;
  // Every stored job, oldest first.
  virtual absl::StatusOr<std::vector<v1::Job>> LoadAll() = 0;
  // The keys of workers assigned to jobs, so that after a restart the
  // coordinator can tell a worker re-adopting its task from an impostor.
  virtual absl::Status SaveWorkerKey(const std::string& worker_id,
                                     const std::string& key) = 0;
  virtual absl::StatusOr<std::map<std::string, std::string>>
  LoadWorkerKeys() = 0;
};

struct SqliteOptions {
  // WAL unless a file system cannot do it (then SQLite keeps DELETE, where
  // a reader can make COMMIT fail with SQLITE_BUSY; tests ask for it).
  std::string journal_mode = "WAL";
  int busy_timeout_ms = 5000;
};

class SqliteJobStore : public JobStore {
 public:
  // Creates `state_dir` and the database if needed.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(
      const std::string& state_dir, const SqliteOptions& options = {});
  ~SqliteJobStore() override;

  absl::Status Save(const v1::Job& job) override;
  absl::Status Delete(const std::string& job_id) override;
  absl::Status SaveTrail(const std::string& job_id,
                         const v1::JobTrail& trail) override;
  absl::StatusOr<std::map<std::string, v1::JobTrail>> LoadTrails() override;
  absl::StatusOr<std::vector<v1::Job>> LoadAll() override;
  absl::Status SaveWorkerKey(const std::string& worker_id,
                             const std::string& key) override;
  absl::StatusOr<std::map<std::string, std::string>> LoadWorkerKeys() override;

 private:
  explicit SqliteJobStore(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` in a transaction: COMMIT when it returns OK, else (or when
  // COMMIT itself fails, e.g. SQLITE_BUSY, which leaves the transaction
  // open) ROLLBACK, so no failure leaves one open for the next call.
  absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
