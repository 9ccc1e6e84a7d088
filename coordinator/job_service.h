// JobServiceImpl: gradsync.v1.JobService over a Coordinator (see
// proto/gradsync/v1/job_service.proto for the contract). Thread-safe; the
// Coordinator must outlive it.
#pragma once

#include "coordinator/auth.h"
#include "coordinator/coordinator.h"
#include "gradsync/v1/job_service.grpc.pb.h"

namespace gradsync {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  // Every call is first checked against `auth` (see auth.h); both must
  // outlive the service.
  JobServiceImpl(Coordinator* coordinator, const Authenticator* auth)
      : coordinator_(coordinator), auth_(auth) {}

  grpc::Status SubmitJob(grpc::ServerContext* context,
                         const v1::SubmitJobRequest* request,
                         v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const v1::GetJobRequest* request,
                      v1::Job* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context,
                         const v1::CancelJobRequest* request,
                         v1::Job* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context,
                        const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;

 private:
  Coordinator* const coordinator_;
  const Authenticator* const auth_;
};

}  // namespace gradsync
