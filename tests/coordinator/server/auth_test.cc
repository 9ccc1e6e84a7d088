// Token authentication over a real server: each service needs its own
// token, missing and wrong tokens are UNAUTHENTICATED with a message, the
// CLI reports it; token files.
#include "coordinator/server/auth.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/cli/commands.h"
#include "coordinator/client/channel.h"
#include "coordinator/server/server.h"
#include "coordinator/wire/secrets.h"
#include "gradsync/v1/worker_service.grpc.pb.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

constexpr char kUser[] = "user-secret-1";
constexpr char kWorker[] = "worker-secret-2";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.address = "127.0.0.1:0";
    o.auth = {kUser, kWorker};
    auto server = CoordinatorServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }

  grpc::Status ListJobs(const std::string& token) {
    auto stub =
        v1::JobService::NewStub(MakeCoordinatorChannel(address_, token));
    v1::ListJobsResponse response;
    return stub->ListJobs(Ctx().get(), v1::ListJobsRequest(), &response);
  }

  grpc::Status Register(const std::string& token) {
    auto stub =
        v1::WorkerService::NewStub(MakeCoordinatorChannel(address_, token));
    v1::RegisterWorkerRequest request;
    request.set_host("127.0.0.1");
    v1::RegisterWorkerResponse response;
    return stub->RegisterWorker(Ctx().get(), request, &response);
  }

  std::unique_ptr<CoordinatorServer> server_;
  std::string address_;
};

TEST_F(AuthTest, JobServiceNeedsTheUserToken) {
  grpc::Status missing = ListJobs("");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(missing.error_message().find("missing token"), std::string::npos)
      << missing.error_message();
  EXPECT_NE(missing.error_message().find("user token"), std::string::npos);

  grpc::Status wrong = ListJobs("guess");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(wrong.error_message().find("wrong token"), std::string::npos);
  EXPECT_EQ(wrong.error_message().find("guess"), std::string::npos)
      << "tokens are never echoed";

  EXPECT_EQ(ListJobs(kWorker).error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "the worker token does not open JobService";
  EXPECT_TRUE(ListJobs(kUser).ok());
}

TEST_F(AuthTest, WorkerServiceNeedsTheWorkerToken) {
  grpc::Status missing = Register("");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(missing.error_message().find("worker token"), std::string::npos)
      << missing.error_message();
  EXPECT_EQ(Register(kUser).error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "the user token does not open WorkerService";
  EXPECT_TRUE(Register(kWorker).ok());
  // The worker registered: a user sees it.
  auto stub = v1::JobService::NewStub(MakeCoordinatorChannel(address_, kUser));
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(
      stub->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &workers).ok());
  EXPECT_EQ(workers.workers_size(), 1);
}

TEST_F(AuthTest, TheCliReportsAMissingTokenAndWorksWithIt) {
  std::ostringstream out, err;
  cli::CliOptions options;
  EXPECT_EQ(cli::Cli(cli::MakeJobStub(address_), options, out, err).List(10),
            1);
  EXPECT_NE(err.str().find("UNAUTHENTICATED"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("GRADSYNC_TOKEN"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(
      cli::Cli(cli::MakeJobStub(address_, kUser), options, out2, err2).List(10),
      0)
      << err2.str();
}

TEST_F(AuthTest, TokensInShippedLogLinesAreRedacted) {
  const std::string data = UniqueTempDir("auth-logs");
  MakeImageFolder(data, 2, 1);
  auto jobs = v1::JobService::NewStub(MakeCoordinatorChannel(address_, kUser));
  auto workers =
      v1::WorkerService::NewStub(MakeCoordinatorChannel(address_, kWorker));
  SimWorker worker(*workers, "a");
  v1::SubmitJobRequest submit;
  submit.mutable_spec()->mutable_dataset()->set_path(data);
  submit.mutable_spec()->set_model("fashion_cnn");
  submit.mutable_spec()->set_batch_size(2);
  submit.mutable_spec()->mutable_world_size()->set_max_workers(1);
  v1::Job job;
  ASSERT_TRUE(jobs->SubmitJob(Ctx().get(), submit, &job).ok());
  v1::Assignment a = worker.AwaitAssignment();
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(worker.id());
  report.mutable_task()->set_job_id(job.id());
  report.mutable_task()->set_attempt(a.attempt());
  report.mutable_task()->set_rank(0);
  report.add_logs()->set_text(std::string("connecting with ") + kWorker +
                              " and " + kUser + " twice: " + kWorker);
  v1::ReportMetricsResponse ignored;
  ASSERT_TRUE(
      workers->ReportMetrics(worker.Context().get(), report, &ignored).ok());
  v1::GetJobLogsRequest request;
  request.set_job_id(job.id());
  v1::GetJobLogsResponse logs;
  ASSERT_TRUE(jobs->GetJobLogs(Ctx().get(), request, &logs).ok());
  ASSERT_EQ(logs.lines_size(), 1);
  EXPECT_EQ(logs.lines(0).text(),
            "connecting with [redacted] and [redacted] twice: [redacted]");
}

TEST(AuthOpenTest, EmptyTokensLeaveTheServicesOpen) {
  TestCluster c;  // no tokens
  auto stub = v1::JobService::NewStub(MakeCoordinatorChannel(c.address(), ""));
  v1::ListJobsResponse response;
  EXPECT_TRUE(
      stub->ListJobs(Ctx().get(), v1::ListJobsRequest(), &response).ok());
  // A client that sends a token to an open coordinator is fine too.
  auto with = v1::JobService::NewStub(MakeCoordinatorChannel(c.address(), "x"));
  EXPECT_TRUE(
      with->ListJobs(Ctx().get(), v1::ListJobsRequest(), &response).ok());
}

TEST(LoadTokenTest, ValueFileAndErrors) {
  EXPECT_EQ(*LoadToken("", "", "--token"), "");
  EXPECT_EQ(*LoadToken("abcdefgh", "", "--token"), "abcdefgh");
  // Spaces, control characters and short tokens are refused, naming the
  // option.
  for (const char* weak :
       {" ", "  ", "abc", "abcd efgh", "abcdefg\x01", "\tabcdefgh"}) {
    absl::StatusOr<std::string> refused = LoadToken(weak, "", "--token");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << weak;
    EXPECT_NE(refused.status().message().find("--token"), std::string::npos);
  }
  const std::string dir = ::testing::TempDir() + "/gradsync_token_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/t") << "from-file\n";
  EXPECT_EQ(*LoadToken("", dir + "/t", "--token"), "from-file");

  absl::StatusOr<std::string> both =
      LoadToken("abcdefgh", dir + "/t", "--token");
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("not both"), std::string::npos);
  absl::StatusOr<std::string> missing = LoadToken("", dir + "/nope", "--token");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir + "/nope"), std::string::npos);
  std::ofstream(dir + "/empty") << " \n";
  EXPECT_EQ(LoadToken("", dir + "/empty", "--token").status().code(),
            absl::StatusCode::kInvalidArgument);
  std::ofstream(dir + "/spaces") << "  x \n";
  EXPECT_EQ(LoadToken("", dir + "/spaces", "--token").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::testing
