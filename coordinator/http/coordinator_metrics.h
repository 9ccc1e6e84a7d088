// The coordinator's /metrics page in Prometheus's text format: jobs and
// workers by state; per job its state, world size, restarts, throughput,
// bounding phase, stall, latest evaluation and snapshot bytes; per rank of
// a running job its step, epoch, loss, samples/s, step-time quantiles and
// mean data-wait / compute / all-reduce time; per worker its heartbeat
// age; per gRPC method its calls by code and a latency histogram. Every
// name starts with gradsync_; times are in seconds, sizes in bytes. Jobs
// are labelled job_id: `job` is the label Prometheus gives each scrape
// target.
//
// Collect() reads a consistent view from a running server (thread-safe, as
// the coordinator is); RenderMetrics() is a pure function of that view.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coordinator/server/rpc_stats.h"
#include "coordinator/server/server.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

struct MetricsView {
  std::vector<v1::Job> jobs;  // every job the coordinator keeps
  std::vector<v1::WorkerInfo> workers;
  std::map<std::string, int64_t> snapshot_bytes;  // by job id
  std::vector<RpcStats::Method> rpcs;
  int64_t now_unix_ms = 0;
};

MetricsView CollectMetricsView(CoordinatorServer& server);
std::string RenderMetrics(const MetricsView& view);

}  // namespace gradsync
