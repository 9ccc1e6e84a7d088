// The monitoring port over a real coordinator: /metrics answers in the
// Prometheus text format with the coordinator's jobs, workers and the gRPC
// calls it served, and only to callers with the user token when one is
// set.
#include "coordinator/http/monitoring.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "absl/strings/escaping.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync {
namespace {

using testing::Ctx;
using testing::SimWorker;
using testing::TestCluster;

httplib::Result Get(int port, const std::string& path,
                    const std::string& authorization = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  httplib::Headers headers;
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  return client.Get(path.c_str(), headers);
}

// A coordinator with one idle worker and one pending job (it needs two),
// and its monitoring port without a user token.
class MonitoredClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job = cluster.Submit(cluster.Spec(2));
    auto started = StartMonitoring(&cluster.server(), "127.0.0.1:0", "");
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

TEST(MonitoringTest, UserTokenGuardsThePages) {
  TestCluster cluster;
  auto monitoring =
      StartMonitoring(&cluster.server(), "127.0.0.1:0", "s3cret-user");
  ASSERT_TRUE(monitoring.ok()) << monitoring.status();
  const int port = (*monitoring)->port();

  httplib::Result res = Get(port, "/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("user token"), std::string::npos);
  EXPECT_EQ(res->body.find("s3cret"), std::string::npos);
  EXPECT_EQ(Get(port, "/metrics", "Bearer wrong")->status, 401);
  EXPECT_EQ(Get(port, "/metrics", "Bearer s3cret-user")->status, 200);
  EXPECT_EQ(
      Get(port, "/metrics", "Basic " + absl::Base64Escape("anyone:s3cret-user"))
          ->status,
      200);
  EXPECT_EQ(Get(port, "/metrics", "Basic " + absl::Base64Escape("s3cret-user"))
                ->status,
            401);
}

TEST(MonitoringTest, BadAddressesAreNamed) {
  TestCluster cluster;
  auto no_port = StartMonitoring(&cluster.server(), "127.0.0.1", "");
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_port.status().message().find("127.0.0.1"), std::string::npos);

  auto first = StartMonitoring(&cluster.server(), "127.0.0.1:0", "");
  ASSERT_TRUE(first.ok());
  auto taken = StartMonitoring(
      &cluster.server(), "127.0.0.1:" + std::to_string((*first)->port()), "");
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MonitoringTest, ShutdownRightAfterStartReturns) {
  TestCluster cluster;
  for (int i = 0; i < 20; ++i) {
    auto monitoring = StartMonitoring(&cluster.server(), "127.0.0.1:0", "");
    ASSERT_TRUE(monitoring.ok());
    (*monitoring)->Shutdown();
  }
}

}  // namespace
}  // namespace gradsync
