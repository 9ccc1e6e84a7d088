// RemoteStore: a worker's view of the coordinator's store of one job
// attempt (a MemoryStore there), over the WorkerService Store* RPCs, called
// for `task` (its worker, job and attempt) with the worker's key (see
// worker_service.proto). Implements
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
              v1::TaskRef task, std::string worker_key)
      : stub_(std::move(stub)),
        task_(std::move(task)),
        worker_key_(std::move(worker_key)) {}
  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;
  absl::StatusOr<std::vector<std::string>> MultiGet(
      const std::vector<std::string>& keys, absl::Duration timeout) override;

 private:
  // A context whose deadline leaves the server `wait` to answer first.
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration wait) const;

  const std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const v1::TaskRef task_;
  const std::string worker_key_;
};

}  // namespace gradsync
