// Store: the key-value store ranks bootstrap through, with c10d Store
// semantics: set, blocking get, atomic add, wait for keys. One interface,
// four implementations, picked by where the ranks are:
//   MemoryStore  (memory_store.h)  one process: the coordinator's store of a
//                                  job attempt, or ranks as threads in tests
//   FileStore    (file_store.h)    processes on one host sharing a directory
//   PrefixStore  (prefix_store.h)  a namespace inside another store
//   RemoteStore  (coordinator/client/remote_store.h) a worker's view of the
//                                  coordinator's MemoryStore over gRPC
// gloo's rendezvous and NCCL's unique id both go through it.
//
// Contract: blocking calls wait at most `timeout` and then fail with
// DEADLINE_EXCEEDED naming the key(s) they waited for; a store that was
// closed fails with its close status. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

class Store {
 public:
  virtual ~Store() = default;
  virtual absl::Status Set(const std::string& key,
                           const std::string& value) = 0;
  // Waits until `key` exists and returns its value.
  virtual absl::StatusOr<std::string> Get(const std::string& key,
                                          absl::Duration timeout) = 0;
  // Adds `delta` to the decimal integer at `key` (0 when absent) and returns
  // the new value; INVALID_ARGUMENT when the value is not an integer.
  virtual absl::StatusOr<int64_t> Add(const std::string& key,
                                      int64_t delta) = 0;
  // Waits until every key exists; DEADLINE_EXCEEDED names the keys still
  // missing. By default one Get after another under one deadline; a store
  // that can wait for all keys in one call (RemoteStore: one RPC)
  // overrides it.
  virtual absl::Status Wait(const std::vector<std::string>& keys,
                            absl::Duration timeout);
  // Waits until every key exists and returns their values in the order of
  // `keys`. By default Wait, then one Get per key; RemoteStore overrides it
  // with one RPC.
  virtual absl::StatusOr<std::vector<std::string>> MultiGet(
      const std::vector<std::string>& keys, absl::Duration timeout);
};

}  // namespace gradsync
