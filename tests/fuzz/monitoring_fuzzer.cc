// libFuzzer target: arbitrary bytes as requests to the coordinator's
// monitoring port (coordinator/http/), built with clang, AddressSanitizer and
// LeakSanitizer by tests/fuzz/run_fuzz.sh.
//
// One coordinator (in memory, with a pending job) and its monitoring port,
// with a user and a metrics token, serve the whole run. The input's first
// byte picks how the rest is sent:
//   even  as raw bytes on a TCP connection of its own (libmicrohttpd parses
//         them; our answer callback, checks and routes run), answer read
//         until the server closes or 0.25 s pass;
//   odd   straight to HttpServer::Respond, as lines: method, path,
//         Authorization, Host, then query "key=value" lines.
// Rules (a violation aborts, so libFuzzer saves the input): an answer of
// 200 needs the metrics token in the request; the user token never
// authorizes on this plaintext port; every 256 inputs an authorized scrape
// must still be answered.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "coordinator/http/monitoring.h"
#include "coordinator/server/server.h"
#include "google/protobuf/stubs/logging.h"

namespace gradsync {
namespace {

constexpr char kUserToken[] = "fuzz-user-token";
constexpr char kMetricsToken[] = "fuzz-metrics-token";

struct Port {
  std::unique_ptr<CoordinatorServer> server;
  std::unique_ptr<HttpServer> http;
};

Port& ThePort() {
  static Port* port = [] {
    auto* p = new Port();
    ServerOptions options;
    options.address = "127.0.0.1:0";
    options.auth.user = kUserToken;
    options.auth.worker = "fuzz-worker-token";
    options.coordinator.run_failure_detector = false;
    p->server = *CoordinatorServer::Start(options);
    MonitoringOptions monitoring;
    monitoring.address = "127.0.0.1:0";
    monitoring.user_token = kUserToken;
    monitoring.metrics_token = kMetricsToken;
    auto http = StartMonitoring(p->server.get(), monitoring);
    if (!http.ok()) {
      std::fprintf(stderr, "monitoring: %s\n",
                   http.status().ToString().c_str());
      std::abort();
    }
    p->http = std::move(*http);
    return p;
  }();
  return *port;
}

// The bytes on a fresh connection; the answer until close (or 0.25 s).
std::string Exchange(const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{0, 250000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(ThePort().http->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ==
      0) {
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char buffer[4096];
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) {
      answer.append(buffer, n);
    }
  }
  ::close(fd);
  return answer;
}

void Check(bool rule, const char* what) {
  if (rule) return;
  std::fprintf(stderr, "monitoring fuzzer: broken rule: %s\n", what);
  std::abort();
}

}  // namespace
}  // namespace gradsync

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  gradsync::ThePort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool has_metrics_token = absl::StrContains(bytes, kMetricsToken) ||
                                 absl::StrContains(bytes, "Basic ");
  if (data[0] % 2 == 0) {
    const std::string answer = Exchange(bytes);
    // Any of the pipelined answers.
    for (absl::string_view line : absl::StrSplit(answer, "\r\n")) {
      if (absl::StartsWith(line, "HTTP/1.") &&
          absl::StrContains(line.substr(0, 13), " 200")) {
        Check(has_metrics_token, "200 without the metrics token");
      }
    }
  } else {
    std::vector<std::string> lines = absl::StrSplit(bytes, '\n');
    lines.resize(std::max<size_t>(lines.size(), 4));
    HttpIncoming request;
    request.method = lines[0];
    request.path = lines[1];
    request.authorization = lines[2];
    request.host = lines[3];
    for (size_t i = 4; i < lines.size(); ++i) {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(lines[i], absl::MaxSplits('=', 1));
      request.query[kv.first] = kv.second;
    }
    const HttpResponse response = ThePort().http->Respond(request);
    if (response.status == 200) {
      Check(HttpAuthorized(request.authorization, kMetricsToken),
            "200 without the metrics token (Respond)");
    }
    if (HttpAuthorized(request.authorization, kUserToken)) {
      Check(response.status == 401, "the user token passed on plain HTTP");
    }
  }
  static int count = 0;
  if (++count % 256 == 0) {
    const std::string scrape = Exchange(
        std::string("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: "
                    "Bearer ") +
        kMetricsToken + "\r\n\r\n");
    Check(absl::StartsWith(scrape, "HTTP/1.1 200"),
          "an authorized scrape was not answered");
  }
  return 0;
}
