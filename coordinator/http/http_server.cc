#include "coordinator/http/http_server.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <regex>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/server/listen_policy.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {

struct HttpServer::Route {
  std::regex pattern;
  HttpHandler handler;
};

namespace {

// TLS 1.2 and 1.3 only, GnuTLS's default ciphers otherwise.
constexpr char kTlsPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

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

// A bound, listening, non-blocking socket on `address` and its port.
// SO_REUSEADDR only (never SO_REUSEPORT, with which a second coordinator
// would share the port instead of failing).
absl::StatusOr<std::pair<int, int>> Listen(const std::string& address,
                                           bool* ipv6) {
  absl::StatusOr<std::pair<std::string, int>> where = SplitAddress(address);
  if (!where.ok()) return where.status();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where->second);
  if (getaddrinfo(where->first.c_str(), port.c_str(), &hints, &found) != 0 ||
      found == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", address,
                     ": the host name does not resolve"));
  }
  const int fd = ::socket(found->ai_family,
                          found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                          found->ai_protocol);
  int yes = 1;
  const bool bound =
      fd >= 0 &&
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes)) == 0 &&
      ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::listen(fd, 128) == 0;
  const int error = errno;
  *ipv6 = found->ai_family == AF_INET6;
  freeaddrinfo(found);
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (!bound ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for HTTP on ", address, ": ", std::strerror(error)));
  }
  const int bound_port =
      local.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  return std::make_pair(fd, bound_port);
}

std::string Header(MHD_Connection* connection, const char* name) {
  const char* value =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
  return value == nullptr ? "" : value;
}

MHD_Result CollectArgument(void* out, MHD_ValueKind, const char* key,
                           const char* value) {
  auto* query = static_cast<std::map<std::string, std::string>*>(out);
  if (query->size() < 64) (*query)[key] = value == nullptr ? "" : value;
  return MHD_YES;
}

HttpResponse Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
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

HttpResponse HttpServer::Respond(const HttpIncoming& request) const {
  if (options_.tokens.empty() && options_.loopback_hosts_only &&
      !IsLoopbackHost(request.host)) {
    return Text(421,
                "421: this monitoring port has no token and answers only "
                "requests addressed to localhost\n");
  }
  for (const auto& [token, reason] : options_.refused_tokens) {
    if (HttpAuthorized(request.authorization, token)) {
      return Text(401, absl::StrCat("401: ", reason, "\n"));
    }
  }
  if (!options_.tokens.empty()) {
    bool authorized = false;
    for (const std::string& token : options_.tokens) {
      authorized |= HttpAuthorized(request.authorization, token);
    }
    if (!authorized) {
      HttpResponse response =
          Text(401, absl::StrCat("401: ", options_.token_hint, "\n"));
      response.headers.emplace_back("WWW-Authenticate",
                                    "Basic realm=\"gradsync\"");
      return response;
    }
  }
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse response =
        Text(405, "405: the monitoring port answers GET and HEAD only\n");
    response.headers.emplace_back("Allow", "GET, HEAD");
    response.headers.emplace_back("Connection", "close");
    return response;
  }
  if (request.has_body) {
    HttpResponse response =
        Text(413, "413: a request to the monitoring port has no body\n");
    response.headers.emplace_back("Connection", "close");
    return response;
  }
  if (request.path.size() > options_.limits.max_path) {
    return Text(414, absl::StrCat("414: paths are at most ",
                                  options_.limits.max_path, " bytes\n"));
  }
  for (const Route& route : routes_) {
    std::smatch match;
    if (!std::regex_match(request.path, match, route.pattern)) continue;
    HttpRequest call;
    call.path = request.path;
    for (size_t i = 1; i < match.size(); ++i) {
      call.groups.push_back(match[i].str());
    }
    call.query = request.query;
    return route.handler(call);
  }
  return Text(404, "404: no such page\n");
}

namespace {

// libmicrohttpd's request callback: answers at its first call, when the
// request line and headers are in (a body, if any, is never read).
MHD_Result Answer(void* cls, MHD_Connection* connection, const char* url,
                  const char* method, const char* /*version*/,
                  const char* /*upload_data*/, size_t* upload_data_size,
                  void** /*state*/) {
  if (*upload_data_size != 0) {
    // A body after the answer was queued: drop it (the connection closes).
    *upload_data_size = 0;
    return MHD_YES;
  }
  HttpIncoming request;
  request.method = method;
  request.path = url;
  request.authorization = Header(connection, MHD_HTTP_HEADER_AUTHORIZATION);
  request.host = Header(connection, MHD_HTTP_HEADER_HOST);
  const std::string length = Header(connection, MHD_HTTP_HEADER_CONTENT_LENGTH);
  request.has_body =
      !Header(connection, MHD_HTTP_HEADER_TRANSFER_ENCODING).empty() ||
      (!length.empty() && length != "0");
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectArgument,
                            &request.query);
  HttpResponse answer = static_cast<HttpServer*>(cls)->Respond(request);
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), const_cast<char*>(answer.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          answer.content_type.c_str());
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  for (const auto& [name, value] : answer.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  const MHD_Result queued =
      MHD_queue_response(connection, answer.status, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  for (auto& [pattern, handler] : options.routes) {
    try {
      s->routes_.push_back(Route{std::regex(pattern), std::move(handler)});
    } catch (const std::regex_error&) {
      return absl::InvalidArgumentError(
          absl::StrCat("HTTP route '", pattern, "' is not a regex"));
    }
  }
  options.routes.clear();
  s->options_ = std::move(options);
  const HttpServerOptions& o = s->options_;
  if (o.tls_cert_pem.empty() != o.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "HTTPS needs both a certificate and its key");
  }
  bool ipv6 = false;
  absl::StatusOr<std::pair<int, int>> listening = Listen(o.address, &ipv6);
  if (!listening.ok()) return listening.status();
  s->port_ = listening->second;
  const HttpLimits& limits = o.limits;
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_LISTEN_SOCKET, listening->first, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE, std::max(1, limits.threads), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, std::max(1, limits.max_connections),
       nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT,
       std::max(1, limits.per_address_connections), nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT,
       static_cast<intptr_t>(limits.connection_memory), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, std::max(1, limits.idle_timeout_s),
       nullptr},
      {MHD_OPTION_STRICT_FOR_CLIENT, 1, nullptr},
  };
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (ipv6) flags |= MHD_USE_IPv6;
  if (!o.tls_cert_pem.empty()) {
    flags |= MHD_USE_TLS;
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0,
                     const_cast<char*>(o.tls_key_pem.c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0,
                     const_cast<char*>(o.tls_cert_pem.c_str())});
    items.push_back(
        {MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  s->daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Answer, s.get(),
                                MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (s->daemon_ == nullptr) {
    ::close(listening->first);
    return o.tls_cert_pem.empty()
               ? absl::UnavailableError(
                     absl::StrCat("cannot serve HTTP on ", o.address))
               : absl::InvalidArgumentError(
                     absl::StrCat("cannot serve HTTPS on ", o.address,
                                  ": the TLS certificate or key was refused"));
  }
  return s;
}

HttpServer::~HttpServer() { Shutdown(); }

void HttpServer::Shutdown() {
  if (daemon_ == nullptr) return;
  MHD_stop_daemon(daemon_);  // joins its threads, closes the socket
  daemon_ = nullptr;
}

}  // namespace gradsync
