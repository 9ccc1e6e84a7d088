// The `gradsync` CLI's commands against a real server.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "coordinator/cli/commands.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  CliRun Run(const std::function<int(cli::Cli&)>& command, bool json = false) {
    std::ostringstream out, err;
    cli::CliOptions options;
    options.json = json;
    cli::Cli cli(cluster_.job_stub(), options, out, err);
    int code = command(cli);
    return {code, out.str(), err.str()};
  }
  cli::JobFlags Flags(int workers) {
    cli::JobFlags f;
    f.dataset = cluster_.dataset();
    f.eval_split = "test";
    f.model = "fashion_cnn";
    f.batch_size = 4;
    f.workers = workers;
    return f;
  }
  TestCluster cluster_;
};

TEST_F(CliTest, SubmitStatusListCancel) {
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(Flags(2), false); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("job-000001 submitted: PENDING"), std::string::npos)
      << r.out;
  r = Run([](cli::Cli& c) { return c.Status("job-000001"); });
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("(10 samples)"), std::string::npos) << r.out;
  r = Run([](cli::Cli& c) { return c.List(0); });
  EXPECT_NE(r.out.find("job-000001"), std::string::npos) << r.out;
  r = Run([](cli::Cli& c) { return c.List(0); }, /*json=*/true);
  EXPECT_NE(r.out.find("\"state\":\"JOB_STATE_PENDING\""), std::string::npos)
      << r.out;
  r = Run(
      [](cli::Cli& c) { return c.Cancel("job-000001", "no longer needed"); });
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("CANCELLED: cancelled by user: no longer needed"),
            std::string::npos)
      << r.out;
  // Watching a finished job prints its end state and exits non-zero.
  r = Run([](cli::Cli& c) { return c.Watch("job-000001"); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("CANCELLED"), std::string::npos) << r.out;
}

TEST_F(CliTest, ListPagesAndDeleteForgetsAFinishedJob) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Run([&](cli::Cli& c) { return c.Submit(Flags(2), false); }).code,
              0);
  }
  CliRun r = Run([](cli::Cli& c) { return c.List(2); });
  EXPECT_NE(r.out.find("job-000003"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("job-000001"), std::string::npos) << r.out;
  r = Run([](cli::Cli& c) { return c.Delete("job-000001"); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION"), std::string::npos) << r.err;
  ASSERT_EQ(Run([](cli::Cli& c) { return c.Cancel("job-000001", ""); }).code,
            0);
  r = Run([](cli::Cli& c) { return c.Delete("job-000001"); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "job-000001 deleted\n");
  r = Run([](cli::Cli& c) { return c.List(0); });
  EXPECT_EQ(r.out.find("job-000001"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("job-000002"), std::string::npos) << r.out;
  r = Run([](cli::Cli& c) { return c.Delete("job-000001"); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadInputPrintsTheMessageAndFails) {
  cli::JobFlags f = Flags(2);
  f.batch_size = 0;
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: job_spec.batch_size must be in [1, "),
            std::string::npos)
      << r.err;
  f = Flags(2);
  f.optimizer = "lbfgs";
  r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--optimizer"), std::string::npos) << r.err;
  r = Run([](cli::Cli& c) { return c.Status("job-31337"); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
  for (const char* bad : {"job-1:x", "job-1:0", ":5", "job-1:2:3"}) {
    f = Flags(2);
    f.resume_snapshot = bad;
    r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
    EXPECT_EQ(r.code, 1) << bad;
    EXPECT_NE(r.err.find("--resume-snapshot wants JOB or JOB:STEP"),
              std::string::npos)
        << r.err;
  }
  f = Flags(2);
  f.resume_snapshot = "job-31337:4";  // well formed, but no such job
  r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND: job 'job-31337' not found"),
            std::string::npos)
      << r.err;
}

TEST_F(CliTest, JobFileWithFlagOverrides) {
  const std::string dir = UniqueTempDir("jobfile");
  const std::string file = dir + "/job.json";
  std::ofstream(file) << R"({"name": "from-file", "model": "mlp",
      "dataset": {"path": ")"
                      << cluster_.dataset()
                      << R"("}, "batch_size": 8, "epochs": 3,
      "world_size": {"max_workers": 1}, "optimizer": {"type": "OPTIMIZER_TYPE_SGD",
      "momentum": 0.9}})";
  cli::JobFlags f;
  f.file = file;
  f.epochs = 5;  // overrides the file
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(f, false); }, true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"name\":\"from-file\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"epochs\":5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OPTIMIZER_TYPE_SGD"), std::string::npos) << r.out;
  std::ofstream(file) << "{not json";
  r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a valid JobSpec"), std::string::npos) << r.err;
}

TEST_F(CliTest, WorkersListsRegisteredWorkers) {
  SimWorker w(cluster_.workers(), "gpu-host-7");
  CliRun r = Run([](cli::Cli& c) { return c.Workers(); });
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("gpu-host-7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("IDLE"), std::string::npos) << r.out;
}

TEST(CliUnreachableTest, ReportsUnavailable) {
  std::ostringstream out, err;
  cli::CliOptions options;
  options.timeout_s = 2;
  cli::Cli cli(cli::MakeJobStub("127.0.0.1:1"), options, out, err);
  EXPECT_EQ(cli.List(0), 1);
  EXPECT_NE(err.str().find("cannot reach the coordinator"), std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace gradsync::testing
