// ShutdownSocketsAt: ends every socket of this process whose local address
// is one of a set, so that whoever waits on them wakes.
//
// Why: a gloo TCP pair fails the operations waiting on it (its buffers'
// waits, gloo's own collectives) when its socket reports the connection's
// end, but offers no call to do that from another thread in the libgloo
// Debian ships (Pair::signalExceptionExternal is protected, and
// gloo/transport/tcp/pair.h does not build without a header the package
// leaves out). Its local address is public (Pair::address() once
// connected), and shutdown(2) on the socket with that address makes its
// event loop see the end and fail them, as when a peer closes. That is
// GlooCommunicator::Abort.
//
// The sockets are found among /proc/self/fd by getsockname; a descriptor
// closed and reused meanwhile is only shut down if the new socket has the
// same local address (that is, it is the same endpoint).
// Thread safety: callable from any thread.
#pragma once

#include <sys/socket.h>

#include <vector>

namespace gradsync {

// Shuts down both directions of each matching socket; returns how many.
int ShutdownSocketsAt(const std::vector<sockaddr_storage>& locals);

// Whether two IPv4/IPv6 socket addresses have the same family, address and
// port.
bool SameSocketAddress(const sockaddr_storage& a, const sockaddr_storage& b);

}  // namespace gradsync
