// HttpServer's bounds, over real sockets: a flood of request bytes costs
// bounded memory, slow clients hold no thread, bodies and long paths are
// refused, and an authorized request is answered through all of it.
#include "coordinator/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

constexpr char kToken[] = "scrape-token-1234";

// A connected socket with 10 s send and receive timeouts (-1 on failure).
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n =
        ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += n;
  }
  return true;
}

// Everything the server sends until it closes (or 10 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) out.append(buffer, n);
  return out;
}

// One request on a connection of its own; the whole answer.
std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  SendAll(fd, request);
  std::string answer = ReadAll(fd);
  ::close(fd);
  return answer;
}

std::string Scrape(int port) {
  return Exchange(port, absl::StrCat("GET /metrics HTTP/1.1\r\nHost: x\r\n"
                                     "Authorization: Bearer ",
                                     kToken, "\r\nConnection: close\r\n\r\n"));
}

// This process's resident memory in KiB.
long ResidentKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    long kb = 0;
    if (absl::StartsWith(line, "VmRSS:") &&
        absl::SimpleAtoi(
            absl::StripAsciiWhitespace(
                absl::string_view(line).substr(6, line.size() - 9)),
            &kb)) {
      return kb;
    }
  }
  return -1;
}

std::unique_ptr<HttpServer> StartGuarded() {
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  options.tokens = {kToken};
  options.token_hint = "needs the token";
  options.routes.emplace_back("/metrics", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "up 1\n", {}};
  });
  auto server = HttpServer::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

TEST(HttpServerTest, FloodOfRequestBytesCostsBoundedMemoryAndScrapesGoOn) {
  std::unique_ptr<HttpServer> server = StartGuarded();
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  ASSERT_NE(Scrape(port).find("up 1"), std::string::npos);
  const long before_kb = ResidentKb();

  // Eight slow clients: half a header each, then silence.
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    slow.push_back(fd);
  }
  // Four floods of 25 MB each: "GET /" and never a newline, in 64 KiB
  // pieces until the server stops reading.
  std::atomic<long> peak_kb{before_kb};
  std::atomic<long> flooded{0};
  std::vector<std::thread> floods;
  for (int i = 0; i < 4; ++i) {
    floods.emplace_back([&] {
      const int fd = Connect(port);
      if (fd < 0) return;
      const std::string piece(64 << 10, 'A');
      SendAll(fd, "GET /");
      for (int sent = 0; sent < 400; ++sent) {
        if (!SendAll(fd, piece)) break;
        flooded += piece.size();
      }
      ::close(fd);
    });
  }
  std::atomic<bool> flooding{true};
  std::thread sampler([&] {
    while (flooding) {
      peak_kb = std::max(peak_kb.load(), ResidentKb());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  // An authorized scrape is answered while all that goes on.
  EXPECT_NE(Scrape(port).find("up 1"), std::string::npos);
  for (std::thread& t : floods) t.join();
  EXPECT_NE(Scrape(port).find("up 1"), std::string::npos);
  flooding = false;
  sampler.join();
  for (int fd : slow) ::close(fd);
  // The server read at most a connection's buffer of each flood.
  EXPECT_LT(peak_kb - before_kb, 32 * 1024)
      << "resident memory grew from " << before_kb << " KiB to " << peak_kb
      << " KiB while " << flooded << " bytes were sent";
}

TEST(HttpServerTest, OversizedHeadersGetAnErrorAndTheConnectionCloses) {
  std::unique_ptr<HttpServer> server = StartGuarded();
  ASSERT_NE(server, nullptr);
  const std::string long_line =
      "GET /" + std::string(100 << 10, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string answer = Exchange(server->port(), long_line);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 414") ||
              absl::StartsWith(answer, "HTTP/1.1 431"))
      << answer.substr(0, 80);
  const std::string long_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " +
      std::string(100 << 10, 'b') + "\r\n\r\n";
  answer = Exchange(server->port(), long_header);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 431") ||
              absl::StartsWith(answer, "HTTP/1.1 414"))
      << answer.substr(0, 80);
  EXPECT_NE(Scrape(server->port()).find("up 1"), std::string::npos);
}

TEST(HttpServerTest, BodiesAndOtherMethodsAreRefused) {
  std::unique_ptr<HttpServer> server = StartGuarded();
  ASSERT_NE(server, nullptr);
  const std::string auth =
      absl::StrCat("Authorization: Bearer ", kToken, "\r\n");
  // A GET announcing 800 MB: answered at once, the body never read.
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n" + auth +
                  "Content-Length: 800000000\r\n\r\n" + std::string(4096, 'z'));
  std::string answer = ReadAll(fd);
  ::close(fd);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 413")) << answer;
  answer = Exchange(server->port(), "POST /metrics HTTP/1.1\r\nHost: x\r\n" +
                                        auth + "Content-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 405")) << answer;
  EXPECT_NE(answer.find("Allow: GET, HEAD"), std::string::npos);
  // Unauthorized callers learn nothing else first.
  answer = Exchange(server->port(),
                    "POST /metrics HTTP/1.1\r\nHost: x\r\n"
                    "Connection: close\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 401")) << answer;
}

TEST(HttpServerTest, RespondChecksBeforeAnyRouteRuns) {
  std::atomic<int> calls{0};
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  options.loopback_hosts_only = true;
  options.routes.emplace_back("/(x+)", [&calls](const HttpRequest& request) {
    ++calls;
    return HttpResponse{200, "text/plain", request.groups[0], {}};
  });
  auto server = HttpServer::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  HttpIncoming request;
  request.method = "GET";
  request.host = "localhost:1";
  request.path = "/xxx";
  EXPECT_EQ((*server)->Respond(request).body, "xxx");
  request.path = "/" + std::string(5000, 'x');
  EXPECT_EQ((*server)->Respond(request).status, 414);
  request.path = "/y";
  EXPECT_EQ((*server)->Respond(request).status, 404);
  request.path = "/xxx";
  request.host = "rebound.example";
  EXPECT_EQ((*server)->Respond(request).status, 421);
  request.host = "";
  EXPECT_EQ((*server)->Respond(request).status, 421);
  EXPECT_EQ(calls, 1);
}

TEST(HttpServerTest, ABadRouteOrAddressIsNamed) {
  HttpServerOptions bad_route;
  bad_route.address = "127.0.0.1:0";
  bad_route.routes.emplace_back("/(", nullptr);
  auto server = HttpServer::Start(std::move(bad_route));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("/("), std::string::npos);
  HttpServerOptions half_tls;
  half_tls.address = "127.0.0.1:0";
  half_tls.tls_cert_pem = "-----BEGIN CERTIFICATE-----";
  EXPECT_EQ(HttpServer::Start(std::move(half_tls)).status().code(),
            absl::StatusCode::kInvalidArgument);
  HttpServerOptions junk_tls;
  junk_tls.address = "127.0.0.1:0";
  junk_tls.tls_cert_pem = "-----BEGIN CERTIFICATE-----\nnot one\n";
  junk_tls.tls_key_pem = "-----BEGIN PRIVATE KEY-----\nnot one\n";
  EXPECT_EQ(HttpServer::Start(std::move(junk_tls)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
