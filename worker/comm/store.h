// Store: the key-value store ranks bootstrap through (c10d Store semantics:
// set, blocking get, atomic add, wait for keys). Implementations:
// InMemoryStore (ranks as threads in one process, tests) and
// CoordinatorStore (the coordinator's per-job-attempt store over gRPC).
// GlooStore adapts any Store to gloo::rendezvous::Store.
//
// Implementations are thread-safe. Blocking calls return DEADLINE_EXCEEDED
// naming what they waited for.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/kv_store.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

class Store {
 public:
  virtual ~Store() = default;
  virtual absl::Status Set(const std::string& key,
                           const std::string& value) = 0;
  virtual absl::StatusOr<std::string> Get(const std::string& key,
                                          absl::Duration timeout) = 0;
  virtual absl::StatusOr<int64_t> Add(const std::string& key,
                                      int64_t delta) = 0;
  virtual absl::Status Wait(const std::vector<std::string>& keys,
                            absl::Duration timeout) = 0;
};

// Keys live in memory; share one instance between threads.
class InMemoryStore : public Store {
 public:
  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;

 private:
  KvStore kv_;
};

// The coordinator's store of one job attempt (WorkerService Store* RPCs),
// called as worker `worker_id` with its key (see worker_service.proto).
class CoordinatorStore : public Store {
 public:
  CoordinatorStore(std::shared_ptr<v1::WorkerService::StubInterface> stub,
                   std::string worker_id, std::string worker_key,
                   std::string job_id, int attempt)
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

  std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const std::string worker_id_;
  const std::string worker_key_;
  const std::string job_id_;
  const int attempt_;
};

// Prefixes every key (e.g. one namespace per communicator).
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : prefix_(std::move(prefix)), base_(std::move(base)) {}
  absl::Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(prefix_ + key, value);
  }
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override {
    return base_->Get(prefix_ + key, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    return base_->Add(prefix_ + key, delta);
  }
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;

 private:
  const std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace gradsync
