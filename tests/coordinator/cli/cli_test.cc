// The `gradsync` CLI's commands against a real server.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
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
  CliRun r = Run([](cli::Cli& c) { return c.Workers(0); });
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("gpu-host-7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("IDLE"), std::string::npos) << r.out;
}

TEST_F(CliTest, WorkersWaitEndsWhenEnoughAreAliveAndNamesTheShortfall) {
  SimWorker w(cluster_.workers(), "host-a");
  CliRun r = Run([](cli::Cli& c) { return c.Workers(1); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("host-a"), std::string::npos) << r.out;
  // Three are never there: the wait ends at --timeout and says how many are.
  std::ostringstream out, err;
  cli::CliOptions options;
  options.timeout_s = 1;
  cli::Cli cli(cluster_.job_stub(), options, out, err);
  EXPECT_EQ(cli.Workers(3), 1);
  EXPECT_NE(err.str().find("waited 1 s for 3 live workers; 1 registered"),
            std::string::npos)
      << err.str();
}

// Finding: an absolute --checkpoint-dir outside the workers' root was
// accepted, failed at step 0 and was retried. Now what every registered
// worker would refuse is refused at submit, naming the roots.
TEST_F(CliTest, CheckpointPathsEveryWorkerWouldRefuseAreRefusedAtSubmit) {
  v1::RegisterWorkerRequest request;
  request.set_host("a");
  request.set_checkpoint_root("/srv/ckpt");
  SimWorker w(cluster_.workers(), request);
  cli::JobFlags f = Flags(1);
  f.checkpoint_dir = "/elsewhere/ckpt";
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("FAILED_PRECONDITION: checkpoint.directory "
                       "/elsewhere/ckpt is outside every registered worker's "
                       "checkpoint root (/srv/ckpt)"),
            std::string::npos)
      << r.err;
  // ... and the flag the user typed for it.
  EXPECT_NE(r.err.find("(--checkpoint-dir)\n"), std::string::npos) << r.err;
  f.checkpoint_dir = "../ckpt";
  r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: checkpoint.directory ../ckpt climbs "
                       "out of the worker's checkpoint root"),
            std::string::npos)
      << r.err;
  // Under the root, or relative (taken under it), is fine.
  for (const char* ok : {"/srv/ckpt/run1", "run1"}) {
    f.checkpoint_dir = ok;
    r = Run([&](cli::Cli& c) { return c.Submit(f, false); });
    EXPECT_EQ(r.code, 0) << ok << ": " << r.err;
  }
  // A relative root is refused at registration.
  request.set_checkpoint_root("relative/root");
  grpc::Status status;
  SimWorker bad(cluster_.workers(), request, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // So is a LibTorch version that is not one (it reaches terminals through
  // `gradsync workers` and the Python client's messages).
  request.set_checkpoint_root("/srv/ckpt");
  request.set_libtorch_version("1.13\n\x1b[2J");
  SimWorker odd(cluster_.workers(), request, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("libtorch_version"), std::string::npos)
      << status.error_message();
}

TEST_F(CliTest, QuietSubmitPrintsOnlyTheJobId) {
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(Flags(2), false, true); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "job-000001\n");
}

TEST_F(CliTest, PlotWritesTheReportedCurve) {
  SimWorker w0(cluster_.workers(), "a"), w1(cluster_.workers(), "b");
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(Flags(2), false); });
  ASSERT_EQ(r.code, 0) << r.err;
  SimWorker* rank0 = nullptr;
  for (SimWorker* w : {&w0, &w1}) {
    if (w->AwaitAssignment().rank() == 0) rank0 = w;
  }
  ASSERT_NE(rank0, nullptr);
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(rank0->id());
  report.mutable_task()->set_job_id("job-000001");
  report.mutable_task()->set_attempt(rank0->task()->attempt());
  for (int step = 1; step <= 3; ++step) {
    v1::StepMetrics* s = report.add_steps();
    s->set_step(step);
    s->set_loss(1.0 / step);
    s->set_samples_per_sec(50);
  }
  v1::EvalMetrics* eval = report.add_eval();
  eval->set_accuracy(0.75);
  v1::ReportMetricsResponse ignored;
  ASSERT_TRUE(cluster_.workers()
                  .ReportMetrics(rank0->Context().get(), report, &ignored)
                  .ok());

  const std::string dir = UniqueTempDir("plot");
  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", dir + "/c.csv"); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("3 training points, 1 evaluation(s)"), std::string::npos)
      << r.out;
  std::ifstream csv(dir + "/c.csv");
  std::string text((std::istreambuf_iterator<char>(csv)),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\ntrain,3,1,0.333333,50,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\neval,3,1,0,,0.75\n"), std::string::npos) << text;
  // CSV on standard output, and the points alone with --json.
  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", "-"); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("kind,step,epoch,", 0), 0u) << r.out;
  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", ""); }, true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"train\""), std::string::npos) << r.out;
  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", ""); });
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("or --json"), std::string::npos) << r.err;
  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", dir + "/c.png"); });
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream png(dir + "/c.png", std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");

  r = Run([&](cli::Cli& c) { return c.Plot("job-000001", dir + "/c.jpg"); });
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(".png or a .csv"), std::string::npos) << r.err;
  r = Run([&](cli::Cli& c) { return c.Plot("job-404", dir + "/d.png"); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos) << r.err;
}

TEST_F(CliTest, LogsOfEveryRankAndAFailedJobsLastLines) {
  SimWorker w0(cluster_.workers(), "a"), w1(cluster_.workers(), "b");
  cli::JobFlags flags = Flags(2);
  flags.max_restarts = 0;
  CliRun r = Run([&](cli::Cli& c) { return c.Submit(flags, false); });
  ASSERT_EQ(r.code, 0) << r.err;
  SimWorker* by_rank[2] = {};
  for (SimWorker* w : {&w0, &w1}) by_rank[w->AwaitAssignment().rank()] = w;
  ASSERT_TRUE(by_rank[0] && by_rank[1]);
  auto ref = [&](int rank) {
    v1::TaskRef t;
    t.set_worker_id(by_rank[rank]->id());
    t.set_job_id("job-000001");
    t.set_attempt(by_rank[rank]->task()->attempt());
    t.set_rank(rank);
    return t;
  };
  auto ship = [&](int rank, const std::vector<std::string>& lines) {
    v1::ReportMetricsRequest report;
    *report.mutable_task() = ref(rank);
    for (const std::string& text : lines) report.add_logs()->set_text(text);
    v1::ReportMetricsResponse ignored;
    return cluster_.workers().ReportMetrics(by_rank[rank]->Context().get(),
                                            report, &ignored);
  };
  ASSERT_TRUE(ship(0, {"rank 0 step 10"}).ok());
  ASSERT_TRUE(ship(1, {"rank 1 step 10",
                       "job-000001 rank 1 failed: "
                       "DATA_LOSS: bad.png is corrupt"})
                  .ok());
  // A worker may not ship lines as another rank.
  v1::ReportMetricsRequest forged;
  *forged.mutable_task() = ref(1);
  forged.mutable_task()->set_rank(0);
  forged.add_logs()->set_text("not mine");
  v1::ReportMetricsResponse ignored;
  EXPECT_EQ(cluster_.workers()
                .ReportMetrics(by_rank[1]->Context().get(), forged, &ignored)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  r = Run(
      [](cli::Cli& c) { return c.Logs("job-000001", std::nullopt, false); });
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "[rank 0] rank 0 step 10\n[rank 1] rank 1 step 10\n[rank 1] "
            "job-000001 rank 1 failed: DATA_LOSS: bad.png is corrupt\n");
  r = Run([](cli::Cli& c) { return c.Logs("job-000001", 0, false); });
  EXPECT_EQ(r.out, "[rank 0] rank 0 step 10\n");

  ASSERT_TRUE(
      by_rank[1]->Complete(false, "DATA_LOSS: bad.png is corrupt").ok());
  r = Run([](cli::Cli& c) { return c.Status("job-000001"); });
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Last log lines of rank 1 (gradsync logs job-000001 "
                       "--rank 1):\n  [rank 1] rank 1 step 10\n  [rank 1] "
                       "job-000001 rank 1 failed: DATA_LOSS: bad.png is "
                       "corrupt\n"),
            std::string::npos)
      << r.out;
  // Following a job that has ended prints what there is and returns.
  r = Run([](cli::Cli& c) {
    return c.Logs("job-000001", 1, true, absl::Milliseconds(10));
  });
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("failed: DATA_LOSS"), std::string::npos);
  // ... and ends saying how the job ended (issue 38: -f stopped silently).
  EXPECT_TRUE(absl::EndsWith(r.out, "(job-000001 ended: FAILED)\n")) << r.out;
  r = Run([](cli::Cli& c) { return c.Logs("job-404", std::nullopt, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("NOT_FOUND"), std::string::npos);
  // Finding: a rank the job never had printed nothing, with status 0.
  r = Run([](cli::Cli& c) { return c.Logs("job-000001", 5, false); });
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("INVALID_ARGUMENT: job job-000001 has ranks 0-1 "
                       "(asked for rank 5)"),
            std::string::npos)
      << r.err;
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
