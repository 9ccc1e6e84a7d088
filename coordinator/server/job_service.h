// JobServiceImpl: gradsync.v1.JobService over a Coordinator (see
// proto/gradsync/v1/job_service.proto for the contract). Thread-safe; the
// Coordinator must outlive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/persist/model_file_store.h"
#include "coordinator/persist/snapshot_store.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/call_gate.h"
#include "gradsync/v1/job_service.grpc.pb.h"

namespace gradsync {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  // Every call is first checked against `auth` (see auth.h); both must
  // outlive the service.
  // Users read model snapshots from `snapshots` and keep model files
  // (at most `max_model_file_bytes` each) in `model_files`. Watches pass
  // through `waiting` (call_gate.h), which must outlive the service too.
  JobServiceImpl(Coordinator* coordinator, const Authenticator* auth,
                 SnapshotStore* snapshots, ModelFileStore* model_files,
                 int64_t max_model_file_bytes, CallGate* waiting)
      : coordinator_(coordinator),
        auth_(auth),
        snapshots_(snapshots),
        model_files_(model_files),
        max_model_file_bytes_(max_model_file_bytes),
        waiting_(waiting) {}

  grpc::Status SubmitJob(grpc::ServerContext* context,
                         const v1::SubmitJobRequest* request,
                         v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const v1::GetJobRequest* request,
                      v1::Job* response) override;
  grpc::Status GetJobCurves(grpc::ServerContext* context,
                            const v1::GetJobCurvesRequest* request,
                            v1::JobCurves* response) override;
  grpc::Status GetJobLogs(grpc::ServerContext* context,
                          const v1::GetJobLogsRequest* request,
                          v1::GetJobLogsResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status DeleteJob(grpc::ServerContext* context,
                         const v1::DeleteJobRequest* request,
                         v1::DeleteJobResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context,
                         const v1::CancelJobRequest* request,
                         v1::Job* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context,
                        const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;
  grpc::Status ListSnapshots(grpc::ServerContext* context,
                             const v1::ListSnapshotsRequest* request,
                             v1::ListSnapshotsResponse* response) override;
  grpc::Status PullSnapshot(
      grpc::ServerContext* context, const v1::PullSnapshotRequest* request,
      grpc::ServerWriter<v1::SnapshotChunk>* writer) override;
  grpc::Status UploadModelFile(grpc::ServerContext* context,
                               grpc::ServerReader<v1::ModelFileChunk>* reader,
                               v1::ModelFileMeta* response) override;
  grpc::Status ListModelFiles(grpc::ServerContext* context,
                              const v1::ListModelFilesRequest* request,
                              v1::ListModelFilesResponse* response) override;
  grpc::Status DeleteModelFile(grpc::ServerContext* context,
                               const v1::DeleteModelFileRequest* request,
                               v1::DeleteModelFileResponse* response) override;
  grpc::Status PullModelFile(
      grpc::ServerContext* context, const v1::PullModelFileRequest* request,
      grpc::ServerWriter<v1::ModelFileChunk>* writer) override;

 private:
  // A spec that trains a model file: checks that the store holds it
  // (NOT_FOUND) and names the model after it when the spec does not.
  absl::Status CheckModelFile(v1::JobSpec* spec);
  // The first job, or submission in progress, that uses `sha256`.
  std::string ModelFileUser(const std::string& sha256);
  // A spec that starts from another job's snapshot: checks that the job and
  // snapshot exist (NOT_FOUND), fixes "latest" to its step and pins the
  // snapshot for `owner`.
  absl::Status PinResumeSnapshot(const std::string& owner, v1::JobSpec* spec);

  Coordinator* const coordinator_;
  const Authenticator* const auth_;
  SnapshotStore* const snapshots_;
  ModelFileStore* const model_files_;
  const int64_t max_model_file_bytes_;
  CallGate* const waiting_;
  // Digests of model files that submissions in progress use (counted):
  // DeleteModelFile refuses them as it refuses those of existing jobs.
  absl::Mutex submitting_mu_;
  std::map<std::string, int> submitting_ ABSL_GUARDED_BY(submitting_mu_);
  std::atomic<int64_t> next_submission_{0};
};

}  // namespace gradsync
