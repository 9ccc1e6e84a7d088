// RemoteStore: a worker's view of the coordinator's store of one job
// attempt (a MemoryStore there), over the WorkerService store calls, made
// for `task` (its worker, job and attempt) with the worker's key (see
// worker_service.proto). Implements Store (foundation/store/store.h).
// Ops go as messages on one StoreSession stream (store_stream.h); an op
// made while another thread's op is on the stream goes as its unary call
// (StoreSet, StoreGet, ...), as every op does with `stream` off. Either
// way a blocking call's deadline leaves the server its `timeout` to answer
// first, and `grace` more. On the stream a Set returns once sent, as
// c10d's TCPStore set does: the coordinator applies ops in order, so this
// client's later store ops see it, and a refused set fails the next op
// that waits for a reply (store_stream.h). It is not ordered before other
// calls (a Barrier RPC, another client's op): a rank reading a key another
// rank set waits for it with a blocking get, as with TCPStore.
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/client/store_stream.h"
#include "foundation/store/store.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

struct RemoteStoreOptions {
  bool stream = true;  // ops on a StoreSession stream; false: unary calls
  absl::Duration grace = absl::Seconds(10);
};

class RemoteStore : public Store {
 public:
  RemoteStore(std::shared_ptr<v1::WorkerService::StubInterface> stub,
              v1::TaskRef task, std::string worker_key,
              RemoteStoreOptions options = {});
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
  // `op` on the stream: its reply's status and result, or nullopt when the
  // stream is off or busy (then the caller makes the unary call).
  std::optional<absl::StatusOr<v1::StoreReply>> OnStream(const v1::StoreOp& op,
                                                         absl::Duration wait);

  const std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const v1::TaskRef task_;
  const std::string worker_key_;
  const RemoteStoreOptions options_;
  std::unique_ptr<StoreStream> stream_;  // null with options_.stream off
};

}  // namespace gradsync
