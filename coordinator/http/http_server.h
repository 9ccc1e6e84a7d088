// HttpServer: a small HTTP/1.1 server (cpp-httplib underneath) for the
// coordinator's monitoring pages, on a port of its own. GET only; each
// route is a regular expression over the path whose groups reach the
// handler. When `token` is set every request must carry it, as
// "Authorization: Bearer <token>" (Prometheus's `authorization`) or as
// the password of HTTP Basic authentication (browsers; any user name);
// otherwise it gets 401 and no route runs.
//
// Start() binds (port 0 picks a free one) and serves on a thread of its
// own with `threads` handler threads; Shutdown() stops it and joins
// (idempotent; the destructor calls it). Handlers run on those threads
// and must be thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

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
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string address;  // host:port ("[::1]:9090" for IPv6); port 0 = any
  std::string token;    // empty = open
  int threads = 4;
  // (path regex, handler), matched in order.
  std::vector<std::pair<std::string, HttpHandler>> routes;
};

class HttpServer {
 public:
  // INVALID_ARGUMENT for an address without a port; UNAVAILABLE when it
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  void Shutdown();

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  int port_ = 0;
};

// Whether an Authorization header value carries `token` (Bearer, or Basic
// with it as the password); compared in constant time.
bool HttpAuthorized(const std::string& header, const std::string& token);

}  // namespace gradsync
