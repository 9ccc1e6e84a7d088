#include "coordinator/http/coordinator_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace gradsync {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

v1::Job RunningJob() {
  v1::Job job;
  job.set_id("job-7");
  job.mutable_spec()->set_name("fmnist \"a\"");
  job.mutable_spec()->set_model("fashion_cnn");
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_backend(v1::BACKEND_GLOO);
  job.set_world_size(2);
  job.set_attempt(2);
  job.set_restarts(1);
  job.set_stall("rank 1 (worker w2 on host b) has not reached collective #3");
  v1::JobMetrics* m = job.mutable_metrics();
  m->set_samples_per_sec(1500);
  m->set_bounding_phase(v1::PHASE_ALLREDUCE);
  for (int rank = 0; rank < 2; ++rank) {
    v1::RankMetrics* r = m->add_ranks();
    r->set_rank(rank);
    r->mutable_last()->set_step(40 + rank);
    r->mutable_last()->set_epoch(1);
    r->mutable_last()->set_loss(0.25);
    r->mutable_last()->set_samples_per_sec(750);
    r->set_p50_step_ms(20);
    r->set_p99_step_ms(45);
    r->set_mean_data_wait_ms(1);
    r->set_mean_compute_ms(15);
    r->set_mean_allreduce_ms(4);
  }
  for (int epoch = 0; epoch < 2; ++epoch) {
    v1::EvalMetrics* e = m->add_eval();
    e->set_epoch(epoch);
    e->set_accuracy(epoch == 0 ? 0.7 : 0.8);
    e->set_loss(epoch == 0 ? 0.9 : 0.5);
  }
  return job;
}

TEST(CoordinatorMetricsTest, JobAndRankSeries) {
  MetricsView view;
  view.jobs.push_back(RunningJob());
  v1::Job done;
  done.set_id("job-1");
  done.set_state(v1::JOB_STATE_SUCCEEDED);
  *done.mutable_metrics()->add_ranks() = view.jobs[0].metrics().ranks(0);
  view.jobs.push_back(done);
  view.snapshot_bytes["job-7"] = 123456;
  std::string text = RenderMetrics(view);

  EXPECT_TRUE(Has(text, "gradsync_jobs{state=\"RUNNING\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_jobs{state=\"SUCCEEDED\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_jobs{state=\"PENDING\"} 0"));
  EXPECT_TRUE(
      Has(text,
          "gradsync_job_info{job_id=\"job-7\",name=\"fmnist \\\"a\\\"\","
          "model=\"fashion_cnn\",backend=\"gloo\",state=\"RUNNING\"} 1"))
      << text;
  EXPECT_TRUE(Has(text, "gradsync_job_restarts_total{job_id=\"job-7\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_job_world_size{job_id=\"job-7\"} 2"));
  EXPECT_TRUE(
      Has(text, "gradsync_job_samples_per_second{job_id=\"job-7\"} 1500"));
  EXPECT_TRUE(Has(text, "gradsync_job_stalled{job_id=\"job-7\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_job_stalled{job_id=\"job-1\"} 0"));
  EXPECT_TRUE(Has(
      text,
      "gradsync_job_bounding_phase{job_id=\"job-7\",phase=\"allreduce\"} 1"));
  // The latest evaluated epoch.
  EXPECT_TRUE(Has(
      text, "gradsync_job_eval_accuracy{job_id=\"job-7\",epoch=\"1\"} 0.8"));
  EXPECT_TRUE(
      Has(text, "gradsync_job_eval_loss{job_id=\"job-7\",epoch=\"1\"} 0.5"));
  EXPECT_TRUE(
      Has(text, "gradsync_job_snapshot_bytes{job_id=\"job-7\"} 123456"));

  EXPECT_TRUE(Has(text, "gradsync_rank_step{job_id=\"job-7\",rank=\"1\"} 41"));
  EXPECT_TRUE(
      Has(text, "gradsync_rank_loss{job_id=\"job-7\",rank=\"0\"} 0.25"));
  EXPECT_TRUE(Has(text,
                  "gradsync_rank_step_time_seconds{job_id=\"job-7\",rank=\"0\","
                  "quantile=\"0.99\"} 0.045"));
  EXPECT_TRUE(Has(text,
                  "gradsync_rank_phase_seconds{job_id=\"job-7\",rank=\"1\","
                  "phase=\"compute\"} 0.015"));
  // Ranks of jobs that are not running have no series.
  EXPECT_EQ(text.find("gradsync_rank_step{job_id=\"job-1\""),
            std::string::npos);
}

// Snapshot uploads the coordinator could not store (issue 39, 14).
TEST(CoordinatorMetricsTest, SnapshotsThatCouldNotBeStored) {
  MetricsView view;
  v1::Job& failing = view.jobs.emplace_back();
  failing.set_id("job-000001");
  failing.set_snapshot_error("the coordinator's snapshot storage is full");
  failing.set_snapshot_failures(3);
  v1::Job& recovered = view.jobs.emplace_back();
  recovered.set_id("job-000002");
  recovered.set_snapshot_failures(1);
  const std::string text = RenderMetrics(view);
  EXPECT_NE(text.find("gradsync_job_snapshot_upload_failures_total{job_id="
                      "\"job-000001\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gradsync_job_snapshot_upload_failures_total{job_id="
                      "\"job-000002\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("gradsync_job_snapshots_failing{job_id=\"job-000001\"} "
                      "1\n"),
            std::string::npos);
  EXPECT_EQ(text.find("gradsync_job_snapshots_failing{job_id=\"job-000002\""),
            std::string::npos);
}

TEST(CoordinatorMetricsTest, WorkersAndHeartbeatAge) {
  MetricsView view;
  view.now_unix_ms = 10'000;
  v1::WorkerInfo w;
  w.set_worker_id("w1");
  w.set_host("a");
  w.set_state(v1::WORKER_STATE_IDLE);
  w.set_last_heartbeat_unix_ms(8'500);
  view.workers.push_back(w);
  std::string text = RenderMetrics(view);
  EXPECT_TRUE(Has(text, "gradsync_workers{state=\"IDLE\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_workers{state=\"DEAD\"} 0"));
  EXPECT_TRUE(Has(text,
                  "gradsync_worker_heartbeat_age_seconds{worker=\"w1\","
                  "host=\"a\",state=\"IDLE\"} 1.5"));
}

TEST(CoordinatorMetricsTest, RpcHistogramIsCumulative) {
  RpcStats stats;
  const std::string method = "/gradsync.v1.JobService/GetJob";
  stats.Record(method, grpc::StatusCode::OK, 0.0004);
  stats.Record(method, grpc::StatusCode::OK, 0.003);
  stats.Record(method, grpc::StatusCode::NOT_FOUND, 20);
  MetricsView view;
  view.rpcs = stats.Methods();
  std::string text = RenderMetrics(view);
  const std::string m = "method=\"" + method + "\"";
  EXPECT_TRUE(
      Has(text, "gradsync_grpc_server_handled_total{" + m + ",code=\"OK\"} 2"));
  EXPECT_TRUE(Has(text, "gradsync_grpc_server_handled_total{" + m +
                            ",code=\"NOT_FOUND\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_grpc_server_handling_seconds_bucket{" + m +
                            ",le=\"0.0005\"} 1"));
  EXPECT_TRUE(Has(text, "gradsync_grpc_server_handling_seconds_bucket{" + m +
                            ",le=\"0.005\"} 2"));
  EXPECT_TRUE(Has(text, "gradsync_grpc_server_handling_seconds_bucket{" + m +
                            ",le=\"10\"} 2"));
  EXPECT_TRUE(Has(text, "gradsync_grpc_server_handling_seconds_bucket{" + m +
                            ",le=\"+Inf\"} 3"));
  EXPECT_TRUE(
      Has(text, "gradsync_grpc_server_handling_seconds_count{" + m + "} 3"));
}

}  // namespace
}  // namespace gradsync
