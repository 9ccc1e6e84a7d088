#include "worker/comm/gloo/socket_shutdown.h"

#include <dirent.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

namespace gradsync {

bool SameSocketAddress(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

int ShutdownSocketsAt(const std::vector<sockaddr_storage>& locals) {
  if (locals.empty()) return 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int shut = 0;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(dir)) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local),
                      &length) != 0) {
      continue;  // not a socket (or gone)
    }
    for (const sockaddr_storage& want : locals) {
      if (SameSocketAddress(local, want)) {
        if (::shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) ++shut;
        break;
      }
    }
  }
  ::closedir(dir);
  return shut;
}

}  // namespace gradsync
