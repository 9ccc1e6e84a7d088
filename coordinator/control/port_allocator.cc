#include "coordinator/control/port_allocator.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<int> PortAllocator::Acquire(const std::string& host,
                                           const std::vector<int>& candidates) {
  std::set<int>& used = used_[host];
  if (!candidates.empty()) {
    std::set<int> sorted(candidates.begin(), candidates.end());
    for (int port : sorted) {
      if (port > 0 && port < 65536 && used.insert(port).second) return port;
    }
  } else {
    for (int port = first_; port <= last_; ++port) {
      if (used.insert(port).second) return port;
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("no free data-plane port left on host ", host, " (",
                   used.size(), " in use)"));
}

void PortAllocator::Release(const std::string& host, int port) {
  auto it = used_.find(host);
  if (it == used_.end()) return;
  it->second.erase(port);
  if (it->second.empty()) used_.erase(it);
}

size_t PortAllocator::InUse(const std::string& host) const {
  auto it = used_.find(host);
  return it == used_.end() ? 0 : it->second.size();
}

}  // namespace gradsync
