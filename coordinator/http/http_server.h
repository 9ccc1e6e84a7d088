// HttpServer: a small HTTP/1.1 server (GNU libmicrohttpd underneath) for the
// coordinator's monitoring pages, on a port of its own. GET and HEAD only;
// each route is a regular expression over the path whose groups reach the
// handler.
//
// Every request is bounded before any handler runs: its request line and
// headers must fit in `limits.connection_memory` (else 414/431 and the
// connection closes), a request body is never read (413, connection closed),
// an idle connection is closed after `limits.idle_timeout_s`, and connections
// are capped in all and per client address. Connections are served by event
// loops, so slow clients hold memory (bounded) but no thread: a flood costs
// at most about max_connections x connection_memory, and other clients are
// still answered.
//
// Authorization: with `tokens` set, a request must carry one of them as
// "Authorization: Bearer <token>" (Prometheus's `authorization`) or as the
// password of HTTP Basic authentication (browsers; any user name), else 401
// and no route runs. A token in `refused_tokens` gets 401 with its own
// explanation (the user token on a plaintext port). With no tokens and
// `loopback_hosts_only`, only requests whose Host names the loopback
// interface are served (421 otherwise), so a web page cannot reach the open
// API by DNS rebinding.
//
// TLS: with `tls_cert_pem` and `tls_key_pem`, the port speaks HTTPS only
// (TLS 1.2 and newer).
//
// Start() binds (port 0 picks a free one) and serves on threads of its own;
// Shutdown() stops it and joins (idempotent; the destructor calls it).
// Handlers run on those threads and must be thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace gradsync {

struct HttpRequest {
  std::string path;
  std::vector<std::string> groups;  // the route's capture groups
  std::map<std::string, std::string> query;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
};

// A request as the server parsed it, before any check (HttpServer::Respond).
struct HttpIncoming {
  std::string method, path;
  std::string authorization, host;  // header values ("" when absent)
  bool has_body = false;            // Content-Length > 0 or Transfer-Encoding
  std::map<std::string, std::string> query;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpLimits {
  int threads = 4;  // event loops; handlers run on them
  int max_connections = 256;
  int per_address_connections = 64;
  size_t connection_memory = 32 << 10;  // request line + headers fit in it
  int idle_timeout_s = 10;
  size_t max_path = 2048;  // longer paths get 414 before any route is tried
};

struct HttpServerOptions {
  std::string address;  // host:port ("[::1]:9090" for IPv6); port 0 = any
  std::vector<std::string> tokens;  // empty = open
  // (token, why it is refused here): answered 401 with the reason.
  std::vector<std::pair<std::string, std::string>> refused_tokens;
  bool loopback_hosts_only = false;  // only with no tokens
  std::string token_hint;  // the 401 answer's text without a valid token
  std::string tls_cert_pem, tls_key_pem;
  HttpLimits limits;
  // (path regex, handler), matched in order.
  std::vector<std::pair<std::string, HttpHandler>> routes;
};

class HttpServer {
 public:
  // INVALID_ARGUMENT for an address without a port or a bad route pattern;
  // UNAVAILABLE when it cannot be bound; INVALID_ARGUMENT when the TLS
  // certificate or key is refused.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  bool tls() const { return !options_.tls_cert_pem.empty(); }
  void Shutdown();

  // Everything the server does with a parsed request: the Host and token
  // checks, the method, body and path limits, then the first matching
  // route (404 when none). Thread-safe; public so that fuzzers and tests
  // can drive it without a socket.
  HttpResponse Respond(const HttpIncoming& request) const;

  struct Route;  // a compiled route (http_server.cc)

 private:
  HttpServer() = default;
  HttpServerOptions options_;
  std::vector<Route> routes_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

// Whether an Authorization header value carries `token` (Bearer, or Basic
// with it as the password); compared in constant time.
bool HttpAuthorized(const std::string& header, const std::string& token);

}  // namespace gradsync
