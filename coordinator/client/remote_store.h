// RemoteStore: a worker's view of the coordinator's store of one job
// attempt (a MemoryStore there), over the WorkerService Store* RPCs, called
// as worker `worker_id` with its key (see worker_service.proto). Implements
// Store (coordinator/store/store.h): a blocking call's RPC deadline leaves
// the server its `timeout` to answer first.
//
// Thread-safe (gRPC stubs are).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "coordinator/store/store.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

class RemoteStore : public Store {
 public:
  RemoteStore(std::shared_ptr<v1::WorkerService::StubInterface> stub,
              std::string worker_id, std::string worker_key, std::string job_id,
              int attempt)
      : stub_(std::move(stub)),
        worker_id_(std::move(worker_id)),
        worker_key_(std::move(worker_key)),
        job_id_(std::move(job_id)),
        attempt_(attempt) {}
  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;

 private:
  // A context whose deadline leaves the server `wait` to answer first.
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration wait) const;

  const std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const std::string worker_id_;
  const std::string worker_key_;
  const std::string job_id_;
  const int attempt_;
};

}  // namespace gradsync
