#include "coordinator/server/job_service.h"

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/server/model_file_rpc.h"
#include "coordinator/server/snapshot_rpc.h"
#include "coordinator/wire/grpc_status.h"

namespace gradsync {
grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* context,
                                       const v1::SubmitJobRequest* request,
                                       v1::Job* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  v1::JobSpec spec = request->spec();
  // Its model file, if any, cannot be deleted from here until the job
  // exists (and refers to it).
  const std::string digest = spec.model_file_sha256();
  if (!digest.empty()) {
    absl::MutexLock lock(&submitting_mu_);
    ++submitting_[digest];
  }
  absl::Cleanup submitted = [this, &digest] {
    if (digest.empty()) return;
    absl::MutexLock lock(&submitting_mu_);
    if (--submitting_[digest] == 0) submitting_.erase(digest);
  };
  if (absl::Status s = CheckModelFile(&spec); !s.ok()) {
    return ToGrpcStatus(s);
  }
  // The snapshot a job resumes from is pinned before the job exists (so
  // retention cannot take it meanwhile), then under the job's own id.
  const std::string submitting = absl::StrCat(
      SnapshotStore::kTransientOwnerPrefix, next_submission_.fetch_add(1));
  if (absl::Status s = PinResumeSnapshot(submitting, &spec); !s.ok()) {
    return ToGrpcStatus(s);
  }
  // The data set's scan ends with the call: at its deadline, or when the
  // client cancels it (or the server shuts down, which cancels calls).
  ScanBudget scan;
  scan.deadline = absl::FromChrono(context->deadline());
  scan.cancelled = [context] { return context->IsCancelled(); };
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(spec, std::move(scan));
  const v1::CheckpointSpec& c = spec.checkpoint();
  if (job.ok() && !c.resume_snapshot_job().empty()) {
    // Cannot fail: the submission's pin kept the snapshot.
    snapshots_
        ->Pin(job->id(), c.resume_snapshot_job(), c.resume_snapshot_step())
        .IgnoreError();
  }
  snapshots_->Unpin(submitting);
  return Reply(std::move(job), response);
}

absl::Status JobServiceImpl::CheckModelFile(v1::JobSpec* spec) {
  if (spec->model_file_sha256().empty()) return absl::OkStatus();
  absl::StatusOr<ModelFileInfo> file =
      model_files_->Find(spec->model_file_sha256());
  if (!file.ok()) {
    return absl::Status(
        file.status().code(),
        absl::StrCat("model_file_sha256: ", file.status().message()));
  }
  if (spec->model().empty()) spec->set_model(file->name);
  return absl::OkStatus();
}

std::string JobServiceImpl::ModelFileUser(const std::string& sha256) {
  std::vector<std::string> jobs = coordinator_->JobsUsingModelFile(sha256);
  if (!jobs.empty()) return absl::StrCat("job ", jobs.front());
  absl::MutexLock lock(&submitting_mu_);
  return submitting_.count(sha256) > 0 ? "a job being submitted" : "";
}

grpc::Status JobServiceImpl::UploadModelFile(
    grpc::ServerContext* context,
    grpc::ServerReader<v1::ModelFileChunk>* reader,
    v1::ModelFileMeta* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  v1::ModelFileChunk first;
  if (!reader->Read(&first)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "model file upload: no chunk");
  }
  return ReceiveModelFile(first, reader, *model_files_, max_model_file_bytes_,
                          response);
}

grpc::Status JobServiceImpl::ListModelFiles(
    grpc::ServerContext* context, const v1::ListModelFilesRequest*,
    v1::ListModelFilesResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  for (const ModelFileInfo& info : model_files_->List()) {
    v1::ModelFileMeta* meta = response->add_files();
    *meta = ToModelFileMeta(info);
    for (std::string& job : coordinator_->JobsUsingModelFile(info.sha256)) {
      meta->add_jobs(std::move(job));
    }
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::DeleteModelFile(
    grpc::ServerContext* context, const v1::DeleteModelFileRequest* request,
    v1::DeleteModelFileResponse*) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return ToGrpcStatus(model_files_->Delete(
      request->sha256(),
      [this](const std::string& sha256) { return ModelFileUser(sha256); }));
}

grpc::Status JobServiceImpl::PullModelFile(
    grpc::ServerContext* context, const v1::PullModelFileRequest* request,
    grpc::ServerWriter<v1::ModelFileChunk>* writer) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return SendModelFile(request->sha256(), *model_files_, writer);
}

absl::Status JobServiceImpl::PinResumeSnapshot(const std::string& owner,
                                               v1::JobSpec* spec) {
  v1::CheckpointSpec* c = spec->mutable_checkpoint();
  if (c->resume_snapshot_job().empty()) {
    if (c->resume_snapshot_step() != 0) {
      return absl::InvalidArgumentError(
          "checkpoint.resume_snapshot_step needs "
          "checkpoint.resume_snapshot_job");
    }
    return absl::OkStatus();
  }
  if (!c->resume_from().empty()) {
    return absl::InvalidArgumentError(
        "checkpoint.resume_from and checkpoint.resume_snapshot_job are "
        "exclusive: resume from a file or from a snapshot");
  }
  if (c->resume_snapshot_step() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint.resume_snapshot_step must be >= 0 (0 = the "
                     "latest), got ",
                     c->resume_snapshot_step()));
  }
  if (absl::StatusOr<v1::Job> from =
          coordinator_->GetJob(c->resume_snapshot_job());
      !from.ok()) {
    return from.status();
  }
  absl::StatusOr<SnapshotInfo> info = snapshots_->Pin(
      owner, c->resume_snapshot_job(),
      c->resume_snapshot_step() == 0 ? -1 : c->resume_snapshot_step());
  if (!info.ok()) return info.status();
  c->set_resume_snapshot_step(info->step);  // "latest" means now
  return absl::OkStatus();
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* context,
                                    const v1::GetJobRequest* request,
                                    v1::Job* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return Reply(coordinator_->GetJob(request->job_id()), response);
}

grpc::Status JobServiceImpl::GetJobCurves(
    grpc::ServerContext* context, const v1::GetJobCurvesRequest* request,
    v1::JobCurves* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return Reply(coordinator_->GetJobCurves(request->job_id()), response);
}

grpc::Status JobServiceImpl::GetJobLogs(grpc::ServerContext* context,
                                        const v1::GetJobLogsRequest* request,
                                        v1::GetJobLogsResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return Reply(coordinator_->GetJobLogs(*request), response);
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* context,
                                      const v1::ListJobsRequest* request,
                                      v1::ListJobsResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  absl::StatusOr<Coordinator::JobPage> page =
      coordinator_->ListJobs(request->page_size(), request->page_token());
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (v1::Job& job : page->jobs) *response->add_jobs() = std::move(job);
  response->set_next_page_token(page->next_page_token);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::DeleteJob(grpc::ServerContext* context,
                                       const v1::DeleteJobRequest* request,
                                       v1::DeleteJobResponse*) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return ToGrpcStatus(coordinator_->DeleteJob(request->job_id()));
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* context,
                                       const v1::CancelJobRequest* request,
                                       v1::Job* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  return Reply(coordinator_->CancelJob(request->job_id(), request->reason()),
               response);
}

grpc::Status JobServiceImpl::WatchJob(
    grpc::ServerContext* context, const v1::WatchJobRequest* request,
    grpc::ServerWriter<v1::JobEvent>* writer) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  absl::StatusOr<CallGate::Pass> pass = waiting_->Enter("watch job");
  if (!pass.ok()) return ToGrpcStatus(pass.status());
  absl::StatusOr<std::shared_ptr<EventLog>> log =
      coordinator_->JobEvents(request->job_id());
  if (!log.ok()) return ToGrpcStatus(log.status());
  // Take the cursor before the snapshot: an event in between is sent twice
  // rather than lost.
  uint64_t cursor = (*log)->EndCursor();
  absl::StatusOr<v1::Job> job = coordinator_->GetJob(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  v1::JobEvent first;
  *first.mutable_summary() = job->metrics();
  *first.mutable_job() = std::move(*job);
  if (!writer->Write(first)) return grpc::Status::OK;
  while (!context->IsCancelled()) {
    EventLog::Batch batch =
        (*log)->Read(cursor, absl::Now() + absl::Milliseconds(250));
    cursor = batch.next_cursor;
    for (const v1::JobEvent& event : batch.events) {
      if (!writer->Write(event)) return grpc::Status::OK;
    }
    if (batch.closed) return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext* context,
                                         const v1::ListWorkersRequest*,
                                         v1::ListWorkersResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  for (v1::WorkerInfo& w : coordinator_->ListWorkers()) {
    *response->add_workers() = std::move(w);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListSnapshots(
    grpc::ServerContext* context, const v1::ListSnapshotsRequest* request,
    v1::ListSnapshotsResponse* response) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  if (absl::StatusOr<v1::Job> job = coordinator_->GetJob(request->job_id());
      !job.ok()) {
    return ToGrpcStatus(job.status());
  }
  for (const SnapshotInfo& info : snapshots_->List(request->job_id())) {
    *response->add_snapshots() = ToMeta(info);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::PullSnapshot(
    grpc::ServerContext* context, const v1::PullSnapshotRequest* request,
    grpc::ServerWriter<v1::SnapshotChunk>* writer) {
  if (grpc::Status s = auth_->Check(*context, Role::kUser); !s.ok()) {
    return s;
  }
  if (absl::StatusOr<v1::Job> job = coordinator_->GetJob(request->job_id());
      !job.ok()) {
    return ToGrpcStatus(job.status());
  }
  return SendSnapshot(request->job_id(),
                      request->has_step() ? request->step() : -1, *snapshots_,
                      writer);
}

}  // namespace gradsync
