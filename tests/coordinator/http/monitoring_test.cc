// The monitoring port over a real coordinator: /metrics answers in the
// Prometheus text format with the coordinator's jobs, workers and the gRPC
// calls it served; only to callers with the metrics token (or, over HTTPS,
// the user token) when one is set, and only to requests for localhost when
// the port is open.
#include "coordinator/http/monitoring.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "coordinator/wire/tls.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync {
namespace {

using testing::Ctx;
using testing::SimWorker;
using testing::TestCluster;
using testing::UniqueTempDir;

httplib::Result Get(int port, const std::string& path,
                    const std::string& authorization = "",
                    const std::string& host = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  httplib::Headers headers;
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  if (!host.empty()) headers.emplace("Host", host);
  return client.Get(path.c_str(), headers);
}

MonitoringOptions At(const std::string& address,
                     const std::string& user_token = "",
                     const std::string& metrics_token = "") {
  MonitoringOptions options;
  options.address = address;
  options.user_token = user_token;
  options.metrics_token = metrics_token;
  return options;
}

// A coordinator with one idle worker and one pending job (it needs two),
// and its monitoring port without a user token.
class MonitoredClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job = cluster.Submit(cluster.Spec(2));
    auto started = StartMonitoring(&cluster.server(), At("127.0.0.1:0"));
    ASSERT_TRUE(started.ok()) << started.status();
    monitoring = std::move(*started);
    port = monitoring->port();
  }

  TestCluster cluster;
  SimWorker worker{cluster.workers(), "host-a"};
  v1::Job job;
  std::unique_ptr<HttpServer> monitoring;
  int port = 0;
};

TEST_F(MonitoredClusterTest, MetricsShowJobsWorkersAndCalls) {
  httplib::Result res = Get(port, "/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"),
            "text/plain; version=0.0.4; charset=utf-8");
  const std::string& body = res->body;
  EXPECT_NE(body.find("gradsync_jobs{state=\"PENDING\"} 1\n"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("gradsync_job_info{job_id=\"" + job.id() + "\""),
            std::string::npos);
  EXPECT_NE(body.find("gradsync_workers{state=\"IDLE\"} 1\n"),
            std::string::npos);
  EXPECT_NE(body.find("gradsync_worker_heartbeat_age_seconds{worker=\"" +
                      worker.id() + "\",host=\"host-a\""),
            std::string::npos);
  EXPECT_NE(body.find("gradsync_grpc_server_handled_total{method=\"/"
                      "gradsync.v1.JobService/SubmitJob\",code=\"OK\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      body.find("gradsync_grpc_server_handled_total{method=\"/"
                "gradsync.v1.WorkerService/RegisterWorker\",code=\"OK\"}"),
      std::string::npos);

  // A failed call is counted by its code.
  v1::GetJobRequest request;
  request.set_job_id("job-404");
  v1::Job out;
  EXPECT_EQ(cluster.jobs().GetJob(Ctx().get(), request, &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  res = Get(port, "/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("gradsync_grpc_server_handled_total{method=\"/"
                           "gradsync.v1.JobService/GetJob\",code=\"NOT_FOUND\"}"
                           " 1\n"),
            std::string::npos);

  EXPECT_EQ(Get(port, "/nothing-here")->status, 404);
}

TEST_F(MonitoredClusterTest, DashboardAndItsJsonApi) {
  httplib::Result res = Get(port, "/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(res->body.find("<script src=\"dashboard.js\">"), std::string::npos);
  res = Get(port, "/dashboard.js");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"),
            "text/javascript; charset=utf-8");
  EXPECT_NE(res->body.find("/api/jobs"), std::string::npos);
  EXPECT_EQ(Get(port, "/dashboard.css")->status, 200);
  EXPECT_EQ(Get(port, "/other.js")->status, 404);

  res = Get(port, "/api/jobs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_NE(res->body.find("\"id\":\"" + job.id() + "\""), std::string::npos)
      << res->body;
  res = Get(port, "/api/workers");
  EXPECT_NE(res->body.find("\"worker_id\":\"" + worker.id() + "\""),
            std::string::npos)
      << res->body;
  res = Get(port, "/api/jobs/" + job.id());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("\"state\":\"JOB_STATE_PENDING\""),
            std::string::npos);
  res = Get(port, "/api/jobs/" + job.id() + "/curves");
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("\"job_id\":\"" + job.id() + "\""),
            std::string::npos)
      << res->body;
  res = Get(port, "/api/jobs/" + job.id() + "/logs");
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("\"state\":\"JOB_STATE_PENDING\""),
            std::string::npos)
      << res->body;
  res = Get(port, "/api/jobs/job-999");
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body, "{\"error\":\"job 'job-999' not found\"}");
}

TEST(MonitoringTest, MetricsTokenGuardsThePagesAndTheUserTokenIsRefused) {
  TestCluster cluster;
  auto monitoring = StartMonitoring(
      &cluster.server(), At("127.0.0.1:0", "s3cret-user", "m3trics-read"));
  ASSERT_TRUE(monitoring.ok()) << monitoring.status();
  const int port = (*monitoring)->port();
  EXPECT_FALSE((*monitoring)->tls());

  httplib::Result res = Get(port, "/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("metrics token"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("s3cret"), std::string::npos);
  EXPECT_EQ(Get(port, "/metrics", "Bearer wrong")->status, 401);
  EXPECT_EQ(Get(port, "/metrics", "Bearer m3trics-read")->status, 200);
  EXPECT_EQ(Get(port, "/api/jobs", "Bearer m3trics-read")->status, 200);
  EXPECT_EQ(Get(port, "/metrics",
                "Basic " + absl::Base64Escape("anyone:m3trics-read"))
                ->status,
            200);
  EXPECT_EQ(Get(port, "/metrics", "Basic " + absl::Base64Escape("m3trics-read"))
                ->status,
            401);
  // The user token would travel in the clear: refused, saying why.
  res = Get(port, "/metrics", "Bearer s3cret-user");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("never accepted over plain HTTP"), std::string::npos)
      << res->body;
  EXPECT_EQ(res->body.find("s3cret"), std::string::npos);
}

TEST(MonitoringTest, UserTokenAloneOnPlainHttpIsAnError) {
  TestCluster cluster;
  auto monitoring =
      StartMonitoring(&cluster.server(), At("127.0.0.1:0", "s3cret-user"));
  ASSERT_FALSE(monitoring.ok());
  EXPECT_EQ(monitoring.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(monitoring.status().message().find("--metrics-token"),
            std::string::npos);
}

TEST(MonitoringTest, MetricsTokenMustDifferAndComesFromTheTokenDirectory) {
  const std::string dir = UniqueTempDir("monitoring-tokens");
  MonitoringOptions options;
  options.metrics_token = "same-token";
  absl::Status same =
      PlanMonitoring("same-token", "worker-token", "", {}, &options);
  EXPECT_EQ(same.code(), absl::StatusCode::kInvalidArgument) << same;

  MonitoringOptions from_dir;
  ASSERT_TRUE(
      PlanMonitoring("user-token", "worker-token", dir, {}, &from_dir).ok());
  EXPECT_EQ(from_dir.metrics_token.size(), 64u);
  EXPECT_EQ(from_dir.user_token, "user-token");
  MonitoringOptions again;
  ASSERT_TRUE(
      PlanMonitoring("user-token", "worker-token", dir, {}, &again).ok());
  EXPECT_EQ(again.metrics_token, from_dir.metrics_token);
  EXPECT_EQ(
      std::filesystem::status(dir + "/metrics-token").permissions(),
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::remove_all(dir);
}

TEST(MonitoringTest, OpenPortAnswersOnlyRequestsForLocalhost) {
  TestCluster cluster;
  auto monitoring = StartMonitoring(&cluster.server(), At("127.0.0.1:0"));
  ASSERT_TRUE(monitoring.ok());
  const int port = (*monitoring)->port();
  EXPECT_EQ(Get(port, "/api/jobs")->status, 200);
  for (const char* host : {"localhost", "localhost:9464", "127.0.0.1",
                           "127.1.2.3:80", "[::1]:9464"}) {
    EXPECT_EQ(Get(port, "/api/jobs", "", host)->status, 200) << host;
  }
  // A page at attacker.example whose name was rebound to 127.0.0.1.
  for (const char* host : {"attacker.example", "attacker.example:9464",
                           "127.0.0.1.attacker.example", "localhost.evil",
                           "[::2]", "127.0.0.256"}) {
    httplib::Result res = Get(port, "/api/jobs", "", host);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 421) << host;
  }
  // Unless told to serve any host (--insecure-listen-anywhere).
  MonitoringOptions any = At("127.0.0.1:0");
  any.any_host = true;
  auto anywhere = StartMonitoring(&cluster.server(), any);
  ASSERT_TRUE(anywhere.ok());
  EXPECT_EQ(
      Get((*anywhere)->port(), "/api/jobs", "", "attacker.example")->status,
      200);
}

// With the coordinator's TLS certificate the port speaks HTTPS only, and
// there the user token is accepted too.
TEST(MonitoringTest, ServesHttpsWithTheCoordinatorsCertificate) {
  const std::string dir = UniqueTempDir("monitoring-tls");
  ASSERT_EQ(std::system(("sh '" + std::string(GRADSYNC_TEST_CERTS_SCRIPT) +
                         "' '" + dir + "' 2>/dev/null")
                            .c_str()),
            0);
  TestCluster cluster;
  MonitoringOptions options = At("127.0.0.1:0");
  ASSERT_TRUE(PlanMonitoring("s3cret-user", "s3cret-worker", "",
                             {dir + "/server.pem", dir + "/server.key", ""},
                             &options)
                  .ok());
  options.metrics_token = "m3trics-read";
  auto monitoring = StartMonitoring(&cluster.server(), options);
  ASSERT_TRUE(monitoring.ok()) << monitoring.status();
  const int port = (*monitoring)->port();
  EXPECT_TRUE((*monitoring)->tls());

  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path((dir + "/ca.pem").c_str());
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  for (const char* token : {"s3cret-user", "m3trics-read"}) {
    httplib::Result res = client.Get(
        "/metrics", {{"Authorization", std::string("Bearer ") + token}});
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << token;
  }
  httplib::Result res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  // Plain HTTP to the HTTPS port gets no page.
  httplib::Result plain = Get(port, "/metrics", "Bearer m3trics-read");
  EXPECT_TRUE(!plain || plain->status != 200);

  // A certificate that is not PEM is refused, naming the option and file.
  MonitoringOptions bad = At("127.0.0.1:0");
  absl::Status refused = PlanMonitoring(
      "", "", "", {dir + "/ca.srl", dir + "/server.key", ""}, &bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_NE(refused.message().find("--tls-cert"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(MonitoringTest, BadAddressesAreNamed) {
  TestCluster cluster;
  auto no_port = StartMonitoring(&cluster.server(), At("127.0.0.1"));
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_port.status().message().find("127.0.0.1"), std::string::npos);

  auto first = StartMonitoring(&cluster.server(), At("127.0.0.1:0"));
  ASSERT_TRUE(first.ok());
  auto taken = StartMonitoring(
      &cluster.server(), At("127.0.0.1:" + std::to_string((*first)->port())));
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MonitoringTest, ShutdownRightAfterStartReturns) {
  TestCluster cluster;
  for (int i = 0; i < 20; ++i) {
    auto monitoring = StartMonitoring(&cluster.server(), At("127.0.0.1:0"));
    ASSERT_TRUE(monitoring.ok());
    (*monitoring)->Shutdown();
  }
}

}  // namespace
}  // namespace gradsync
