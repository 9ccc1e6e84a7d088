// PortAllocator: data-plane ports per host, so that two jobs whose rank 0
// lives on the same host never get the same MASTER_PORT. A port is taken
// from the candidates a worker offered (or the default range) and held
// until Release().
//
// Not thread-safe: the owner (Coordinator) serialises access.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

class PortAllocator {
 public:
  // Ports [first, last] are the candidates when a worker offered none.
  PortAllocator(int first, int last) : first_(first), last_(last) {}

  // The lowest candidate not in use on `host`. RESOURCE_EXHAUSTED when all
  // are taken.
  absl::StatusOr<int> Acquire(const std::string& host,
                              const std::vector<int>& candidates);
  void Release(const std::string& host, int port);
  // Marks a port in use that was handed out before a restart.
  void Reserve(const std::string& host, int port) { used_[host].insert(port); }
  size_t InUse(const std::string& host) const;

 private:
  const int first_;
  const int last_;
  std::map<std::string, std::set<int>> used_;
};

}  // namespace gradsync
