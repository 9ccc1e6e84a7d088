#include "coordinator/persist/job_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {
namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  state TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  updated_unix_ms INTEGER NOT NULL,
  record BLOB NOT NULL            -- serialized gradsync.v1.Job
);
CREATE TABLE IF NOT EXISTS transitions (
  job_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  reason TEXT NOT NULL,
  time_unix_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, seq)
);
CREATE TABLE IF NOT EXISTS trails (
  job_id TEXT PRIMARY KEY,
  record BLOB NOT NULL            -- serialized gradsync.v1.JobTrail
);
CREATE TABLE IF NOT EXISTS worker_keys (
  worker_id TEXT PRIMARY KEY,
  key TEXT NOT NULL               -- RegisterWorkerResponse.worker_key
);
)sql";

// Finalizes a prepared statement when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

absl::Status SqliteError(sqlite3* db, const std::string& what) {
  return absl::InternalError(
      absl::StrCat("sqlite: ", what, ": ", sqlite3_errmsg(db)));
}

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()),
                    SQLITE_TRANSIENT);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(
    const std::string& state_dir, const SqliteOptions& options) {
  std::error_code ec;
  // A new state directory is private (job records, worker keys).
  if (std::filesystem::create_directories(state_dir, ec) && !ec) {
    std::filesystem::permissions(state_dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create state directory ", state_dir, ": ", ec.message()));
  }
  const std::string path = state_dir + "/gradsync.db";
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    absl::Status s = absl::FailedPreconditionError(absl::StrCat(
        "cannot open ", path, ": ", db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return s;
  }
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  // It holds worker keys: owner only.
  chmod(path.c_str(), 0600);
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(db));
  absl::MutexLock lock(&store->mu_);
  const std::string journal =
      absl::StrCat("PRAGMA journal_mode=", options.journal_mode, ";");
  for (const char* sql :
       {journal.c_str(), "PRAGMA synchronous=NORMAL;", kSchema}) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  return store;
}

SqliteJobStore::~SqliteJobStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
}

absl::Status SqliteJobStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("sqlite: ", err));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteJobStore::InTransaction(
    const std::function<absl::Status()>& body) {
  // A transaction left open by a failure this code did not foresee would
  // make every later BEGIN fail: end it first.
  if (sqlite3_get_autocommit(db_) == 0) Exec("ROLLBACK;").IgnoreError();
  if (absl::Status s = Exec("BEGIN;"); !s.ok()) return s;
  absl::Status s = body();
  if (s.ok()) s = Exec("COMMIT;");
  if (!s.ok() && sqlite3_get_autocommit(db_) == 0) {
    Exec("ROLLBACK;").IgnoreError();
  }
  return s;
}

absl::Status SqliteJobStore::Save(const v1::Job& job) {
  std::string blob;
  if (!job.SerializeToString(&blob)) {
    return absl::InternalError("cannot serialize job " + job.id());
  }
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement record(db_,
                     "INSERT OR REPLACE INTO jobs (id, name, state, "
                     "created_unix_ms, updated_unix_ms, record) "
                     "VALUES (?, ?, ?, ?, ?, ?);");
    if (!record.ok()) return SqliteError(db_, "prepare jobs");
    BindText(record.get(), 1, job.id());
    BindText(record.get(), 2, job.spec().name());
    BindText(record.get(), 3, v1::JobState_Name(job.state()));
    sqlite3_bind_int64(record.get(), 4, job.created_unix_ms());
    sqlite3_bind_int64(record.get(), 5, job.updated_unix_ms());
    sqlite3_bind_blob(record.get(), 6, blob.data(),
                      static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(record.get()) != SQLITE_DONE) {
      return SqliteError(db_, "save job " + job.id());
    }
    Statement st(db_,
                 "INSERT OR IGNORE INTO transitions (job_id, seq, from_state, "
                 "to_state, reason, time_unix_ms) VALUES (?, ?, ?, ?, ?, ?);");
    if (!st.ok()) return SqliteError(db_, "prepare transitions");
    for (int i = 0; i < job.transitions_size(); ++i) {
      const v1::Transition& t = job.transitions(i);
      sqlite3_reset(st.get());
      BindText(st.get(), 1, job.id());
      sqlite3_bind_int(st.get(), 2, i);
      BindText(st.get(), 3, v1::JobState_Name(t.from()));
      BindText(st.get(), 4, v1::JobState_Name(t.to()));
      BindText(st.get(), 5, t.reason());
      sqlite3_bind_int64(st.get(), 6, t.time_unix_ms());
      if (sqlite3_step(st.get()) != SQLITE_DONE) {
        return SqliteError(db_, "save transition of " + job.id());
      }
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::Delete(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const char* sql : {"DELETE FROM jobs WHERE id = ?;",
                            "DELETE FROM transitions WHERE job_id = ?;",
                            "DELETE FROM trails WHERE job_id = ?;"}) {
      Statement st(db_, sql);
      if (!st.ok()) return SqliteError(db_, "prepare delete");
      BindText(st.get(), 1, job_id);
      if (sqlite3_step(st.get()) != SQLITE_DONE) {
        return SqliteError(db_, "delete job " + job_id);
      }
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::SaveTrail(const std::string& job_id,
                                       const v1::JobTrail& trail) {
  std::string blob;
  if (!trail.SerializeToString(&blob)) {
    return absl::InternalError("cannot serialize the trail of job " + job_id);
  }
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "INSERT OR REPLACE INTO trails (job_id, record) VALUES (?, ?);");
  if (!st.ok()) return SqliteError(db_, "prepare trail");
  BindText(st.get(), 1, job_id);
  sqlite3_bind_blob(st.get(), 2, blob.data(), static_cast<int>(blob.size()),
                    SQLITE_TRANSIENT);
  if (sqlite3_step(st.get()) != SQLITE_DONE) {
    return SqliteError(db_, "save the trail of job " + job_id);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, v1::JobTrail>>
SqliteJobStore::LoadTrails() {
  absl::MutexLock lock(&mu_);
  Statement st(db_, "SELECT job_id, record FROM trails;");
  if (!st.ok()) return SqliteError(db_, "prepare trails");
  std::map<std::string, v1::JobTrail> trails;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const std::string job_id =
        reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
    v1::JobTrail trail;
    // A damaged trail costs the job its curve and log, not its record.
    if (!trail.ParseFromArray(sqlite3_column_blob(st.get(), 1),
                              sqlite3_column_bytes(st.get(), 1))) {
      LogLine("coordinator",
              absl::StrFormat("the stored curve and log of job %s are "
                              "corrupt; dropped",
                              job_id.c_str()));
      continue;
    }
    trails[job_id] = std::move(trail);
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "load trails");
  return trails;
}

absl::StatusOr<std::vector<v1::Job>> SqliteJobStore::LoadAll() {
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "SELECT id, record FROM jobs ORDER BY created_unix_ms, id;");
  if (!st.ok()) return SqliteError(db_, "prepare load");
  std::vector<v1::Job> jobs;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const void* data = sqlite3_column_blob(st.get(), 1);
    const int size = sqlite3_column_bytes(st.get(), 1);
    v1::Job job;
    if (!job.ParseFromArray(data, size)) {
      return absl::DataLossError(absl::StrCat(
          "job record ",
          reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)),
          " in the state database is corrupt"));
    }
    jobs.push_back(std::move(job));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "load jobs");
  return jobs;
}

absl::Status SqliteJobStore::SaveWorkerKey(const std::string& worker_id,
                                           const std::string& key) {
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "INSERT OR REPLACE INTO worker_keys (worker_id, key) "
               "VALUES (?, ?);");
  if (!st.ok()) return SqliteError(db_, "prepare worker key");
  BindText(st.get(), 1, worker_id);
  BindText(st.get(), 2, key);
  if (sqlite3_step(st.get()) != SQLITE_DONE) {
    return SqliteError(db_, "save worker key");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>>
SqliteJobStore::LoadWorkerKeys() {
  absl::MutexLock lock(&mu_);
  Statement st(db_, "SELECT worker_id, key FROM worker_keys;");
  if (!st.ok()) return SqliteError(db_, "prepare worker keys");
  std::map<std::string, std::string> keys;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    keys[reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0))] =
        reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "load worker keys");
  return keys;
}

}  // namespace gradsync
