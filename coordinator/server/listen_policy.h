// Where the coordinator listens and with which tokens, decided before it
// starts. An open coordinator (no tokens) lets anyone who reaches it submit
// jobs, register as a worker, win rank 0 and upload a snapshot users later
// load; so:
//   - the user and worker tokens are set together or not at all;
//   - with neither set and a token directory given (--token-dir, what the
//     compose file uses), both are read from <dir>/user-token and
//     <dir>/worker-token, created with random contents (mode 0600) when
//     missing;
//   - still without tokens, a non-loopback address is narrowed to loopback
//     unless `insecure_anywhere` (--insecure-listen-anywhere) is set.
// `note` says what was decided, for the log; it never holds a token.
// Thread safety: pure functions, except for the token files.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

struct ListenPlan {
  std::string address;  // host:port to bind
  std::string user_token;
  std::string worker_token;
  std::string note;  // one line for the log; empty when nothing to say
};

// FAILED_PRECONDITION when only one token is set; INVALID_ARGUMENT when they
// are equal or `address` has no port; errors of the token files name them.
absl::StatusOr<ListenPlan> PlanListen(const std::string& address,
                                      const std::string& user_token,
                                      const std::string& worker_token,
                                      const std::string& token_dir,
                                      bool insecure_anywhere);

// The token in `path`, or a new random one (64 hex digits) written there
// (0600, never through a link, never over an existing file); `created` says
// which. FAILED_PRECONDITION when it cannot be written.
absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path,
                                              bool* created);

// Writes `token` to `path` (0600, replacing what is there, never through a
// link), for another party to read that one token. FAILED_PRECONDITION when
// there is no token to share or it cannot be written.
absl::Status ShareToken(const std::string& path, const std::string& token);

// Whether a host (an HTTP Host header, with or without a port) names the
// loopback interface: localhost, [::1], or 127.0.0.0/8 as four decimal
// numbers (a name such as 127.0.0.1.example.com is not).
bool IsLoopbackHost(const std::string& host);

// Whether a host:port names the loopback interface, as IsLoopbackHost;
// false without a port.
bool IsLoopbackAddress(const std::string& address);

// Host and port of "host:port" / "[v6]:port" (the brackets stay on the
// host); false without a port.
bool SplitHostPort(const std::string& address, std::string* host,
                   std::string* port);

// The loopback address on the port of `address` ("127.0.0.1:PORT", or
// "[::1]:PORT" for an IPv6 host): where a port is narrowed to when it may
// not be served openly. `address` must have a port (SplitHostPort).
std::string LoopbackOf(const std::string& address);

}  // namespace gradsync
