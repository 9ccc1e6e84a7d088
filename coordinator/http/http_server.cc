#include "coordinator/http/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/server/listen_policy.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {
namespace {

// Host (without IPv6 brackets; empty: every interface) and port number of
// "host:port" or "[v6]:port".
absl::StatusOr<std::pair<std::string, int>> SplitAddress(
    const std::string& address) {
  std::string host, port_text;
  int port = -1;
  if (!SplitHostPort(address, &host, &port_text) ||
      !absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTP address '", address, "' is not host:port (port 0..65535)"));
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  return std::make_pair(host, port);
}

}  // namespace

bool HttpAuthorized(const std::string& header, const std::string& token) {
  constexpr absl::string_view kBearer = "Bearer ";
  constexpr absl::string_view kBasic = "Basic ";
  if (absl::StartsWith(header, kBearer)) {
    return KeysEqual(absl::string_view(header).substr(kBearer.size()), token);
  }
  if (absl::StartsWith(header, kBasic)) {
    std::string decoded;
    if (!absl::Base64Unescape(absl::string_view(header).substr(kBasic.size()),
                              &decoded)) {
      return false;
    }
    size_t colon = decoded.find(':');
    if (colon == std::string::npos) return false;
    return KeysEqual(absl::string_view(decoded).substr(colon + 1), token);
  }
  return false;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options) {
  absl::StatusOr<std::pair<std::string, int>> where =
      SplitAddress(options.address);
  if (!where.ok()) return where.status();
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *s->server_;
  const int threads = std::max(1, options.threads);
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(threads);
  };
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, with
  // which a second coordinator would share the port instead of failing.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  if (!options.token.empty()) {
    server.set_pre_routing_handler(
        [token = options.token](const httplib::Request& req,
                                httplib::Response& res) {
          if (HttpAuthorized(req.get_header_value("Authorization"), token)) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          res.status = 401;
          res.set_header("WWW-Authenticate", "Basic realm=\"gradsync\"");
          res.set_content(
              "401: this coordinator's monitoring pages need its user token "
              "(Authorization: Bearer <token>, or as the Basic password)\n",
              "text/plain; charset=utf-8");
          return httplib::Server::HandlerResponse::Handled;
        });
  }
  for (auto& [pattern, handler] : options.routes) {
    server.Get(pattern,
               [handler = std::move(handler)](const httplib::Request& req,
                                              httplib::Response& res) {
                 HttpRequest request;
                 request.path = req.path;
                 for (size_t i = 1; i < req.matches.size(); ++i) {
                   request.groups.push_back(req.matches[i].str());
                 }
                 for (const auto& [key, value] : req.params)
                   request.query[key] = value;
                 HttpResponse response = handler(request);
                 res.status = response.status;
                 res.set_content(response.body, response.content_type.c_str());
               });
  }
  if (where->second == 0) {
    s->port_ = server.bind_to_any_port(where->first);
  } else if (server.bind_to_port(where->first, where->second)) {
    s->port_ = where->second;
  }
  if (s->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", options.address,
                     " (address in use or invalid?)"));
  }
  s->thread_ = std::thread([&server, done = &s->listen_returned_] {
    server.listen_after_bind();
    done->store(true);
  });
  return s;
}

HttpServer::~HttpServer() { Shutdown(); }

void HttpServer::Shutdown() {
  if (!thread_.joinable()) return;
  // stop() does nothing before the listening thread is running: wait for
  // it to start (it does at once) or to have returned.
  while (!server_->is_running() && !listen_returned_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
  thread_.join();
}

}  // namespace gradsync
