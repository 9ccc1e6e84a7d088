#include "coordinator/persist/job_persister.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "foundation/text/terminal_text.h"

namespace gradsync {

JobPersister::JobPersister(JobStore* store, Listener listener,
                           absl::Duration first_retry, absl::Duration max_retry)
    : store_(store),
      listener_(std::move(listener)),
      first_retry_(first_retry),
      max_retry_(max_retry),
      thread_([this] { Loop(); }) {}

JobPersister::~JobPersister() { Stop(absl::Seconds(5)); }

void JobPersister::Save(const v1::Job& job) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    LogLine("coordinator",
            absl::StrFormat("job %s not persisted: shutting down", job.id()));
    return;
  }
  jobs_[job.id()] = job;
}

void JobPersister::SaveTrail(const std::string& job_id, v1::JobTrail trail) {
  absl::MutexLock lock(&mu_);
  if (!stopping_) trails_[job_id] = std::move(trail);
}

void JobPersister::Delete(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  jobs_[job_id] = std::nullopt;
  trails_.erase(job_id);
}

void JobPersister::SaveWorkerKey(const std::string& worker_id,
                                 const std::string& key) {
  absl::MutexLock lock(&mu_);
  if (!stopping_) keys_[worker_id] = key;
}

absl::Status JobPersister::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return PendingLocked() == 0;
  };
  if (mu_.AwaitWithTimeout(absl::Condition(&drained), timeout)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(
      absl::StrCat(PendingLocked(),
                   " job record(s) or worker key(s) not yet "
                   "written to the state database after ",
                   absl::FormatDuration(timeout)));
}

void JobPersister::Stop(absl::Duration timeout) {
  if (absl::Status s = Flush(timeout); !s.ok()) {
    LogLine("coordinator",
            absl::StrFormat("%s; giving up on them", s.message()));
  }
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopping_ = stopped_ = true;
  }
  thread_.join();
}

void JobPersister::Loop() {
  absl::Duration backoff = first_retry_;
  while (true) {
    std::map<std::string, std::optional<v1::Job>> jobs;
    std::map<std::string, std::string> keys;
    std::map<std::string, v1::JobTrail> trails;
    {
      absl::MutexLock lock(&mu_);
      auto work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !jobs_.empty() || !keys_.empty() ||
               !trails_.empty();
      };
      mu_.Await(absl::Condition(&work));
      if (stopping_) return;
      jobs.swap(jobs_);
      keys.swap(keys_);
      trails.swap(trails_);
      in_flight_ = jobs.size() + keys.size() + trails.size();
    }
    if (WriteBatch(std::move(jobs), std::move(keys), std::move(trails))) {
      backoff = first_retry_;
      continue;
    }
    // Wait before the retry, unless told to stop.
    absl::MutexLock lock(&mu_);
    auto stop = [this]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stop), backoff)) return;
    backoff = std::min(backoff * 2, max_retry_);
  }
}

bool JobPersister::WriteBatch(
    std::map<std::string, std::optional<v1::Job>> jobs,
    std::map<std::string, std::string> keys,
    std::map<std::string, v1::JobTrail> trails) {
  bool all_ok = true;
  // Keys first: a saved assignment is only useful with its worker's key.
  for (auto& [worker_id, key] : keys) {
    absl::Status s = store_->SaveWorkerKey(worker_id, key);
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (s.ok()) continue;
    all_ok = false;
    keys_.emplace(worker_id, std::move(key));  // unless a newer one came
    LogLine("coordinator",
            absl::StrFormat("cannot persist worker %s's key: %s; "
                            "retrying",
                            worker_id, s.ToString()));
  }
  for (auto& [job_id, job] : jobs) {
    const absl::Status s =
        job.has_value() ? store_->Save(*job) : store_->Delete(job_id);
    {
      absl::MutexLock lock(&mu_);
      --in_flight_;
      if (!s.ok()) jobs_.emplace(job_id, std::move(job));  // unless newer
    }
    if (!s.ok()) {
      all_ok = false;
      failing_.insert(job_id);
      LogLine(
          "coordinator",
          absl::StrFormat("cannot persist job %s: %s; retrying (the "
                          "coordinator keeps running; a restart now would lose "
                          "this job's latest state)",
                          job_id, s.ToString()));
      if (listener_) listener_(job_id, s);
    } else if (failing_.erase(job_id) > 0) {
      LogLine("coordinator", absl::StrFormat("job %s persisted again", job_id));
      if (listener_) listener_(job_id, s);
    }
  }
  // Trails after their records (a trail without a record is never loaded).
  for (auto& [job_id, trail] : trails) {
    const absl::Status s = store_->SaveTrail(job_id, trail);
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (s.ok()) continue;
    all_ok = false;
    trails_.emplace(job_id, std::move(trail));  // unless a newer one came
    LogLine("coordinator",
            absl::StrFormat("cannot persist job %s's curve and log: %s; "
                            "retrying",
                            job_id, s.ToString()));
  }
  return all_ok;
}

}  // namespace gradsync
