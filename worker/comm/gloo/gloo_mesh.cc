// The gloo full mesh (see gloo_mesh.h).
#include "worker/comm/gloo/gloo_mesh.h"

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "foundation/store/rendezvous_keys.h"
#include "worker/comm/gloo/gloo_error.h"

namespace gradsync {
namespace {

using gloo::transport::tcp::Address;

// A gloo::Context over a transport context this file connected (gloo's own
// subclass fills the same two protected members in connectFullMesh).
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size,
              std::shared_ptr<gloo::transport::Device> device,
              std::shared_ptr<gloo::transport::Context> transport)
      : gloo::Context(rank, size) {
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

// The port of an IPv4 or IPv6 socket address, in network byte order.
uint16_t PortOf(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) {
    return reinterpret_cast<const sockaddr_in6&>(ss).sin6_port;
  }
  return reinterpret_cast<const sockaddr_in&>(ss).sin_port;
}

// The host part of an IPv4 or IPv6 socket address, port 0 and every other
// byte zero, so two of them compare with memcmp.
sockaddr_storage HostOf(const sockaddr_storage& ss) {
  sockaddr_storage out = {};
  out.ss_family = ss.ss_family;
  if (ss.ss_family == AF_INET6) {
    const auto& in = reinterpret_cast<const sockaddr_in6&>(ss);
    auto& o = reinterpret_cast<sockaddr_in6&>(out);
    o.sin6_addr = in.sin6_addr;
    o.sin6_scope_id = in.sin6_scope_id;
  } else {
    reinterpret_cast<sockaddr_in&>(out).sin_addr =
        reinterpret_cast<const sockaddr_in&>(ss).sin_addr;
  }
  return out;
}

// `host` (from HostOf) with its port set to `port` (network byte order).
sockaddr_storage WithPort(sockaddr_storage host, uint16_t port) {
  if (host.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6&>(host).sin6_port = port;
  } else {
    reinterpret_cast<sockaddr_in&>(host).sin_port = port;
  }
  return host;
}

// What a rank publishes: its hostname, the address its pairs listen on and,
// for every rank, the port of its pair with that rank (0 for itself): each
// pair of Debian's gloo listens on a port of its own. Fixed-width fields in
// host byte order, as gloo's own addresses are: the ranks of a group run
// one build of the worker.
struct MeshKey {
  std::string hostname;
  sockaddr_storage listen = {};
  std::vector<uint16_t> port;

  std::string Encode() const {
    const uint64_t host_len = hostname.size();
    std::string out;
    out.append(reinterpret_cast<const char*>(&host_len), sizeof(host_len));
    out.append(hostname);
    out.append(reinterpret_cast<const char*>(&listen), sizeof(listen));
    out.append(reinterpret_cast<const char*>(port.data()),
               port.size() * sizeof(uint16_t));
    return out;
  }

  // INTERNAL when `bytes` is not a key of a group of `size` ranks.
  static absl::StatusOr<MeshKey> Decode(const std::string& bytes, int size,
                                        int rank) {
    uint64_t host_len = 0;
    const size_t fixed = sizeof(host_len) + sizeof(sockaddr_storage) +
                         static_cast<size_t>(size) * sizeof(uint16_t);
    if (bytes.size() >= sizeof(host_len)) {
      std::memcpy(&host_len, bytes.data(), sizeof(host_len));
    }
    if (bytes.size() < fixed || bytes.size() - fixed != host_len) {
      return absl::InternalError(
          absl::StrCat("gloo: rank ", rank, "'s mesh key has ", bytes.size(),
                       " bytes, not a key of a group of ", size,
                       " ranks (do all ranks run the same gradsync-worker?)"));
    }
    MeshKey key;
    const char* p = bytes.data() + sizeof(host_len);
    key.hostname.assign(p, host_len);
    p += host_len;
    std::memcpy(&key.listen, p, sizeof(key.listen));
    p += sizeof(key.listen);
    key.port.resize(size);
    std::memcpy(key.port.data(), p, key.port.size() * sizeof(uint16_t));
    return key;
  }
};

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooMesh(
    const GlooMeshOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size || o.store == nullptr ||
      o.batch_keys < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gloo mesh: need 0 <= rank < size, a store and batch_keys >= 1 (rank ",
        o.rank, ", size ", o.size, ", batch_keys ", o.batch_keys, ")"));
  }
  const auto timeout =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout));
  try {
    gloo::transport::tcp::attr attr(o.interface.c_str());
    std::shared_ptr<gloo::transport::Device> device =
        gloo::transport::tcp::CreateDevice(attr);
    std::shared_ptr<gloo::transport::Context> transport =
        device->createContext(o.rank, o.size);
    transport->setTimeout(timeout);  // pairs take it when created

    MeshKey mine;
    mine.hostname = Hostname();
    mine.port.assign(o.size, 0);
    for (int peer = 0; peer < o.size; ++peer) {
      if (peer == o.rank) continue;
      Address address(transport->createPair(peer)->address().bytes());
      const sockaddr_storage listen = HostOf(address.getSockaddr());
      if (mine.listen.ss_family == AF_UNSPEC) {
        mine.listen = listen;
      } else if (std::memcmp(&listen, &mine.listen, sizeof(listen)) != 0) {
        return absl::InternalError(absl::StrCat(
            "gloo: the pairs of rank ", o.rank,
            " listen on different addresses (", address.str(), ")"));
      }
      mine.port[peer] = PortOf(address.getSockaddr());
    }

    if (o.size > 1) {
      if (absl::Status s =
              o.store->Set(rendezvous_keys::GlooMesh(o.rank), mine.Encode());
          !s.ok()) {
        return s;
      }
    }
    // Read the peers' keys a batch at a time, then connect the pairs in rank
    // order, as connectFullMesh does; the ranks on this host before this one
    // give the pairs' local rank.
    std::vector<int> peers;
    for (int peer = 0; peer < o.size; ++peer) {
      if (peer != o.rank) peers.push_back(peer);
    }
    std::vector<std::pair<int, Address>> remotes;
    int local_rank = 0;
    const absl::Time deadline = absl::Now() + o.timeout;  // for all batches
    for (size_t begin = 0; begin < peers.size(); begin += o.batch_keys) {
      const size_t end =
          std::min(peers.size(), begin + static_cast<size_t>(o.batch_keys));
      std::vector<std::string> keys;
      for (size_t i = begin; i < end; ++i)
        keys.push_back(rendezvous_keys::GlooMesh(peers[i]));
      absl::StatusOr<std::vector<std::string>> values = o.store->MultiGet(
          keys, std::max(deadline - absl::Now(), absl::ZeroDuration()));
      if (!values.ok()) return values.status();
      for (size_t i = begin; i < end; ++i) {
        const int peer = peers[i];
        absl::StatusOr<MeshKey> key =
            MeshKey::Decode((*values)[i - begin], o.size, peer);
        if (!key.ok()) return key.status();
        if (peer < o.rank && key->hostname == mine.hostname) ++local_rank;
        remotes.emplace_back(peer,
                             Address(WithPort(key->listen, key->port[o.rank])));
      }
    }
    for (const auto& [peer, address] : remotes) {
      std::unique_ptr<gloo::transport::Pair>& pair = transport->getPair(peer);
      pair->setLocalRank(local_rank);
      pair->connect(address.bytes());
    }
    auto context = std::make_shared<MeshContext>(o.rank, o.size, device,
                                                 std::move(transport));
    context->setTimeout(timeout);
    return std::shared_ptr<gloo::Context>(std::move(context));
  } catch (const std::exception& e) {
    return GlooError(e);
  }
}

}  // namespace gradsync
