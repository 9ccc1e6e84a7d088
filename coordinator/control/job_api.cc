// Coordinator, the JobService side: submit (validation, data roots, sample
// counts), get, list, cancel, events, workers.
#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/control/bounded_text.h"
#include "coordinator/control/checkpoint_paths.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/control/coordinator_internal.h"
#include "coordinator/control/job_spec.h"
#include "coordinator/control/job_state.h"
#include "coordinator/control/job_views.h"
#include "foundation/data_index/data_roots.h"
#include "foundation/data_index/image_folder_index.h"
#include "foundation/data_index/shard_index.h"
#include "foundation/data_index/split_kind.h"
#include "foundation/data_index/synthetic_presets.h"
#include "foundation/files/confined_path.h"
#include "foundation/files/mapped_file.h"
#include "foundation/torch_file/tensor_file.h"

namespace gradsync {
namespace {

// A failed scan of a split: cut short by its budget (CANCELLED /
// DEADLINE_EXCEEDED, kept), or the data set's fault, INVALID_ARGUMENT
// naming the field.
absl::Status ScanFailed(const std::string& where, const absl::Status& s) {
  if (absl::IsCancelled(s) || absl::IsDeadlineExceeded(s)) return s;
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.message()));
}

// The samples of a tensor file split (<path>/<split>.pt), from its zip
// directory and pickle alone: its tensors stay unread. The file must lie
// under the data roots (links resolved).
absl::StatusOr<int64_t> CountTensorFile(const std::string& field,
                                        const std::string& file,
                                        const std::vector<std::string>& roots) {
  const std::string where = absl::StrCat("job_spec.", field);
  if (absl::Status s = CheckUnderRoots(where, file, roots); !s.ok()) return s;
  absl::StatusOr<MappedFile> mapped = MappedFile::Open(file);
  if (!mapped.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", mapped.status().message()));
  }
  absl::StatusOr<TensorFileLayout> layout =
      ReadTensorFileLayout(mapped->bytes());
  if (!layout.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", file, ": ", layout.status().message()));
  }
  return layout->samples;
}

// The samples of a split held as WebDataset shards (<path>/<split>/*.tar),
// from their headers (shard_index.h); the directory and every shard must
// lie under the data roots.
absl::StatusOr<int64_t> CountShards(const std::string& field,
                                    const std::string& dir,
                                    const std::vector<std::string>& roots,
                                    const ScanBudget& budget) {
  const std::string where = absl::StrCat("job_spec.", field);
  if (absl::Status s = CheckUnderRoots(where, dir, roots); !s.ok()) return s;
  absl::StatusOr<ShardIndex> index = IndexShards(dir, budget);
  if (!index.ok()) return ScanFailed(where, index.status());
  for (const ShardFile& shard : index->shards) {
    if (absl::Status s = CheckUnderRoots(where, shard.path, roots); !s.ok()) {
      return s;
    }
  }
  return static_cast<int64_t>(index->samples.size());
}

// Size of a split; errors name the JobSpec field. A synthetic data set's
// comes from its preset (no files, no data roots); a tensor file's from its
// layout (CountTensorFile); shards' from their headers (CountShards). An image
// folder is checked against the data roots before it is listed (a listing error
// names what it found), and every link the listing followed after. A scan
// cut short by `budget` keeps its CANCELLED / DEADLINE_EXCEEDED.
absl::StatusOr<int64_t> CountSamples(const std::string& field,
                                     const std::string& path,
                                     const std::string& split,
                                     const std::vector<std::string>& roots,
                                     const ScanBudget& budget) {
  if (IsSyntheticPath(path)) {
    absl::StatusOr<int64_t> size = SyntheticSplitSize(path, split);
    if (!size.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("job_spec.", field, ": ", size.status().message()));
    }
    return size;
  }
  const SplitKind kind = KindOfSplit(path, split);
  if (kind == SplitKind::kTensorFile) {
    return CountTensorFile(field, TensorFilePath(path, split), roots);
  }
  if (kind == SplitKind::kShards) {
    return CountShards(field, SplitPath(path, split), roots, budget);
  }
  const std::string folder = SplitPath(path, split);
  if (absl::Status s =
          CheckUnderRoots(absl::StrCat("job_spec.", field), folder, roots);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<ImageFolderIndex> index = ScanImageFolder(folder, budget);
  if (!index.ok()) {
    return ScanFailed(absl::StrCat("job_spec.", field), index.status());
  }
  if (absl::Status s = CheckIndexUnderDataRoots(
          absl::StrCat("job_spec.", field), *index, roots);
      !s.ok()) {
    return s;
  }
  return static_cast<int64_t>(index->samples.size());
}

}  // namespace

using coordinator_internal::UnixMs;

absl::Status Coordinator::CheckActiveJobLimit() {
  if (shut_down_) return absl::UnavailableError("coordinator is shutting down");
  if (static_cast<int>(active_.size()) < options_.max_active_jobs) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      active_.size(),
      " jobs are pending or running; this coordinator takes at most ",
      options_.max_active_jobs, " (--max-active-jobs): wait or cancel one"));
}

absl::StatusOr<v1::Job> Coordinator::SubmitJob(v1::JobSpec spec,
                                               ScanBudget scan) {
  ApplyJobSpecDefaults(&spec);
  if (absl::Status s = ValidateJobSpec(spec, options_.max_world_size);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          IsSyntheticPath(spec.dataset().path())
              ? absl::OkStatus()
              : CheckUnderRoots("dataset.path", spec.dataset().path(),
                                options_.data_roots);
      !s.ok()) {
    return s;
  }
  // Refuse before the scan when the queue is full (and again after it, as
  // other submissions may have come in meanwhile), and checkpoint paths
  // that every registered worker would refuse.
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckActiveJobLimit(); !s.ok()) return s;
    std::vector<std::string> roots;
    for (const auto& [id, w] : workers_) {
      if (w.info.state() != v1::WORKER_STATE_DEAD) {
        roots.push_back(w.info.checkpoint_root());
      }
    }
    if (absl::Status s = CheckCheckpointPaths(spec, roots); !s.ok()) return s;
  }
  // Scan the data set outside the lock: it touches the file system. It
  // ends when the caller gives up, the coordinator stops, or it has taken
  // max_scan_time.
  scan.deadline = std::min(scan.deadline, absl::Now() + options_.max_scan_time);
  scan.cancelled = [caller = std::move(scan.cancelled), this] {
    return stopping_.load() || (caller && caller());
  };
  absl::StatusOr<int64_t> train =
      CountSamples("dataset.path", spec.dataset().path(),
                   spec.dataset().split(), options_.data_roots, scan);
  if (!train.ok()) return train.status();
  int64_t eval = 0;
  if (!spec.dataset().eval_split().empty()) {
    absl::StatusOr<int64_t> n =
        CountSamples("dataset.eval_split", spec.dataset().path(),
                     spec.dataset().eval_split(), options_.data_roots, scan);
    if (!n.ok()) return n.status();
    eval = *n;
  }

  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckActiveJobLimit(); !s.ok()) return s;
  const int64_t seq = next_job_++;
  const std::string id = absl::StrFormat("job-%06d", seq);
  JobEntry& entry = jobs_[id];
  entry.queue_seq = seq;
  entry.job.set_id(id);
  *entry.job.mutable_spec() = std::move(spec);
  entry.job.set_created_unix_ms(UnixMs(absl::Now()));
  entry.job.set_train_samples(*train);
  entry.job.set_eval_samples(eval);
  Index(entry);
  Transition(entry, v1::JOB_STATE_PENDING,
             absl::StrCat("submitted; waiting for ",
                          entry.job.spec().world_size().min_workers(),
                          " idle worker(s)"));
  Schedule();
  return Snapshot(entry);
}

absl::StatusOr<v1::Job> Coordinator::GetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  return Snapshot(**entry);
}

std::vector<std::string> Coordinator::JobsUsingModelFile(
    const std::string& sha256) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<int64_t, std::string>> users;
  for (const auto& [id, entry] : jobs_) {
    if (entry.job.spec().model_file_sha256() == sha256 ||
        entry.job.trained_model_sha256() == sha256) {
      users.emplace_back(entry.queue_seq, id);
    }
  }
  std::sort(users.begin(), users.end());
  std::vector<std::string> ids;
  for (auto& [seq, id] : users) ids.push_back(std::move(id));
  return ids;
}

absl::StatusOr<v1::JobCurves> Coordinator::GetJobCurves(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  v1::JobCurves curves = (*entry)->metrics.Curves();
  curves.set_job_id(job_id);
  return curves;
}

absl::StatusOr<v1::GetJobLogsResponse> Coordinator::GetJobLogs(
    const v1::GetJobLogsRequest& request) {
  if (request.after_seq() < 0 || request.max_lines() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("after_seq and max_lines must be >= 0 (got ",
                     request.after_seq(), " and ", request.max_lines(), ")"));
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(request.job_id());
  if (!entry.ok()) return entry.status();
  if (request.has_rank()) {
    // The ranks the job can have: an ended job's attempts', else up to its
    // max_workers (an elastic restart may add ranks).
    const v1::Job& job = (*entry)->job;
    int ranks = job.spec().world_size().max_workers();
    if (IsTerminal(job.state())) {
      ranks = job.world_size();
      for (const v1::AttemptRecord& a : job.attempts()) {
        ranks = std::max(ranks, a.world_size());
      }
    }
    if (request.rank() < 0 || request.rank() >= ranks) {
      return absl::InvalidArgumentError(
          ranks == 0
              ? absl::StrCat("job ", job.id(), " ended with no ranks")
              : absl::StrCat("job ", job.id(), " has ranks 0-", ranks - 1,
                             " (asked for rank ", request.rank(), ")"));
    }
  }
  JobLogs::Page page = (*entry)->logs.Read(
      request.has_rank() ? std::optional<int>(request.rank()) : std::nullopt,
      request.after_seq(), request.max_lines());
  v1::GetJobLogsResponse response;
  response.mutable_lines()->Assign(page.lines.begin(), page.lines.end());
  response.set_next_seq(page.next_seq);
  response.set_dropped(page.dropped);
  response.set_state((*entry)->job.state());
  return response;
}

absl::StatusOr<Coordinator::JobPage> Coordinator::ListJobs(
    int page_size, const std::string& page_token) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size must be >= 0 (got ", page_size, ")"));
  }
  if (page_size == 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  // The token is the id of the last job of the previous page; the next page
  // starts below its sequence number, whether or not it still exists.
  int64_t before = std::numeric_limits<int64_t>::max();
  if (!page_token.empty() &&
      (!absl::StartsWith(page_token, "job-") ||
       !absl::SimpleAtoi(absl::string_view(page_token).substr(4), &before) ||
       before < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token '", page_token,
                     "' is not a next_page_token this coordinator gave"));
  }
  absl::MutexLock lock(&mu_);
  JobPage page;
  auto it = by_seq_.lower_bound(before);
  size_t bytes = 0;
  while (it != by_seq_.begin() &&
         static_cast<int>(page.jobs.size()) < page_size) {
    v1::Job job = Abridged(Snapshot(*std::prev(it)->second));
    bytes += job.ByteSizeLong();
    if (!page.jobs.empty() && bytes > options_.max_list_page_bytes) break;
    --it;
    page.jobs.push_back(std::move(job));
  }
  if (it != by_seq_.begin() && !page.jobs.empty()) {
    page.next_page_token = page.jobs.back().id();
  }
  return page;
}

absl::Status Coordinator::DeleteJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  const v1::Job& job = (*entry)->job;
  if (!IsTerminal(job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is ", JobStateName(job.state()),
                     "; only a finished job can be deleted (cancel it first)"));
  }
  Forget(job_id);
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> Coordinator::CancelJob(const std::string& job_id,
                                               const std::string& reason) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  JobEntry& e = **entry;
  if (IsTerminal(e.job.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is already ",
                     JobStateName(e.job.state()), "; nothing to cancel"));
  }
  Transition(e, v1::JOB_STATE_CANCELLED,
             reason.empty() ? "cancelled by user"
                            : absl::StrCat("cancelled by user: ",
                                           Bounded(reason, kMaxReasonBytes)));
  return Snapshot(e);
}

absl::StatusOr<std::shared_ptr<EventLog>> Coordinator::JobEvents(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<JobEntry*> entry = FindJob(job_id);
  if (!entry.ok()) return entry.status();
  return (*entry)->events;
}

std::vector<v1::WorkerInfo> Coordinator::ListWorkers() {
  absl::MutexLock lock(&mu_);
  std::vector<const WorkerEntry*> entries;
  for (const auto& [id, w] : workers_) entries.push_back(&w);
  std::sort(entries.begin(), entries.end(),
            [](const WorkerEntry* a, const WorkerEntry* b) {
              return a->seq < b->seq;
            });
  std::vector<v1::WorkerInfo> out;
  for (const WorkerEntry* w : entries) {
    v1::WorkerInfo info = w->info;
    info.set_last_heartbeat_unix_ms(UnixMs(w->last_heartbeat));
    out.push_back(std::move(info));
  }
  return out;
}

// ---------------------------------------------------------------- workers

}  // namespace gradsync
