#include "coordinator/http/coordinator_metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/control/job_state.h"
#include "coordinator/http/prometheus_text.h"

namespace gradsync {
namespace {

constexpr double kMsPerSecond = 1000.0;

std::string PhaseName(v1::Phase phase) {
  switch (phase) {
    case v1::PHASE_DATA:
      return "data";
    case v1::PHASE_COMPUTE:
      return "compute";
    case v1::PHASE_ALLREDUCE:
      return "allreduce";
    default:
      return "";
  }
}

std::string BackendName(v1::Backend backend) {
  std::string name = v1::Backend_Name(backend);
  constexpr absl::string_view kPrefix = "BACKEND_";
  if (absl::string_view(name).substr(0, kPrefix.size()) == kPrefix) {
    name = name.substr(kPrefix.size());
  }
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

void WriteStateCounts(const MetricsView& view, PrometheusText& out) {
  out.Family("gradsync_jobs", "gauge", "Jobs the coordinator keeps, by state.");
  std::map<std::string, int> jobs;
  for (int s = v1::JOB_STATE_PENDING; s <= v1::JOB_STATE_CANCELLED; ++s) {
    jobs[JobStateName(static_cast<v1::JobState>(s))] = 0;
  }
  for (const v1::Job& job : view.jobs) ++jobs[JobStateName(job.state())];
  for (const auto& [state, n] : jobs) out.Sample({{"state", state}}, n);

  out.Family("gradsync_workers", "gauge", "Registered workers, by state.");
  std::map<std::string, int> workers;
  for (int s = v1::WORKER_STATE_IDLE; s <= v1::WORKER_STATE_DEAD; ++s) {
    workers[WorkerStateName(static_cast<v1::WorkerState>(s))] = 0;
  }
  for (const v1::WorkerInfo& w : view.workers)
    ++workers[WorkerStateName(w.state())];
  for (const auto& [state, n] : workers) out.Sample({{"state", state}}, n);

  out.Family("gradsync_worker_heartbeat_age_seconds", "gauge",
             "Time since each worker's last heartbeat.");
  for (const v1::WorkerInfo& w : view.workers) {
    out.Sample(
        {{"worker", w.worker_id()},
         {"host", w.host()},
         {"state", WorkerStateName(w.state())}},
        std::max<int64_t>(0, view.now_unix_ms - w.last_heartbeat_unix_ms()) /
            kMsPerSecond);
  }
}

// Latest evaluation of a job (highest epoch), or null.
const v1::EvalMetrics* LatestEval(const v1::Job& job) {
  const v1::EvalMetrics* latest = nullptr;
  for (const v1::EvalMetrics& e : job.metrics().eval()) {
    if (latest == nullptr || e.epoch() >= latest->epoch()) latest = &e;
  }
  return latest;
}

void WriteJobs(const MetricsView& view, PrometheusText& out) {
  out.Family("gradsync_job_info", "gauge",
             "One per job (value 1): its name, model, backend and state.");
  for (const v1::Job& job : view.jobs) {
    out.Sample({{"job_id", job.id()},
                {"name", job.spec().name()},
                {"model", job.spec().model()},
                {"backend", BackendName(job.backend())},
                {"state", JobStateName(job.state())}},
               1);
  }
  struct JobGauge {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const v1::Job&);
  };
  const JobGauge gauges[] = {
      {"gradsync_job_world_size", "gauge", "Ranks of the job's attempt.",
       [](const v1::Job& j) { return double(j.world_size()); }},
      {"gradsync_job_attempt", "gauge", "The job's rendezvous attempt, from 1.",
       [](const v1::Job& j) { return double(j.attempt()); }},
      {"gradsync_job_restarts_total", "counter",
       "Times the job restarted after a failed attempt.",
       [](const v1::Job& j) { return double(j.restarts()); }},
      {"gradsync_job_samples_per_second", "gauge",
       "Training throughput: the sum of the ranks' last samples/s.",
       [](const v1::Job& j) { return j.metrics().samples_per_sec(); }},
      {"gradsync_job_stalled", "gauge",
       "1 while a rank has not reached a collective the others wait in.",
       [](const v1::Job& j) { return j.stall().empty() ? 0.0 : 1.0; }},
  };
  for (const JobGauge& g : gauges) {
    out.Family(g.name, g.type, g.help);
    for (const v1::Job& job : view.jobs) {
      out.Sample({{"job_id", job.id()}}, g.value(job));
    }
  }
  out.Family("gradsync_job_bounding_phase", "gauge",
             "1 for the phase (data, compute, allreduce) that bounds the "
             "job's throughput, from its slowest rank.");
  for (const v1::Job& job : view.jobs) {
    std::string phase = PhaseName(job.metrics().bounding_phase());
    if (phase.empty()) continue;
    out.Sample({{"job_id", job.id()}, {"phase", phase}}, 1);
  }
  struct EvalGauge {
    const char* name;
    const char* help;
    double (*value)(const v1::EvalMetrics&);
  };
  const EvalGauge evals[] = {
      {"gradsync_job_eval_accuracy",
       "Evaluation accuracy (0..1) after the job's latest evaluated epoch.",
       [](const v1::EvalMetrics& e) { return e.accuracy(); }},
      {"gradsync_job_eval_loss",
       "Evaluation loss after the job's latest evaluated epoch.",
       [](const v1::EvalMetrics& e) { return e.loss(); }},
  };
  for (const EvalGauge& g : evals) {
    out.Family(g.name, "gauge", g.help);
    for (const v1::Job& job : view.jobs) {
      if (const v1::EvalMetrics* e = LatestEval(job)) {
        out.Sample({{"job_id", job.id()}, {"epoch", absl::StrCat(e->epoch())}},
                   g.value(*e));
      }
    }
  }
  out.Family("gradsync_job_snapshot_bytes", "gauge",
             "Bytes of the job's model snapshots kept by the coordinator.");
  for (const auto& [job, bytes] : view.snapshot_bytes) {
    out.Sample({{"job_id", job}}, static_cast<double>(bytes));
  }
  out.Family("gradsync_job_snapshot_upload_failures_total", "counter",
             "Snapshot uploads of the job the coordinator could not store "
             "(its storage full or failing).");
  for (const v1::Job& job : view.jobs) {
    if (job.snapshot_failures() > 0) {
      out.Sample({{"job_id", job.id()}},
                 static_cast<double>(job.snapshot_failures()));
    }
  }
  out.Family("gradsync_job_snapshots_failing", "gauge",
             "1 while the job's newest snapshot upload could not be stored.");
  for (const v1::Job& job : view.jobs) {
    if (!job.snapshot_error().empty()) out.Sample({{"job_id", job.id()}}, 1);
  }
}

void WriteRanks(const MetricsView& view, PrometheusText& out) {
  struct RankGauge {
    const char* name;
    const char* help;
    double (*value)(const v1::RankMetrics&);
  };
  const RankGauge gauges[] = {
      {"gradsync_rank_step", "Global step of the rank's last report.",
       [](const v1::RankMetrics& r) { return double(r.last().step()); }},
      {"gradsync_rank_epoch", "Epoch of the rank's last report.",
       [](const v1::RankMetrics& r) { return double(r.last().epoch()); }},
      {"gradsync_rank_loss", "Training loss of the rank's last report.",
       [](const v1::RankMetrics& r) { return r.last().loss(); }},
      {"gradsync_rank_samples_per_second",
       "The rank's training throughput at its last report.",
       [](const v1::RankMetrics& r) { return r.last().samples_per_sec(); }},
  };
  // Ranks of running jobs only: a finished job keeps its job-level series.
  std::vector<std::pair<const v1::Job*, const v1::RankMetrics*>> ranks;
  for (const v1::Job& job : view.jobs) {
    if (job.state() != v1::JOB_STATE_RUNNING) continue;
    for (const v1::RankMetrics& r : job.metrics().ranks()) {
      ranks.emplace_back(&job, &r);
    }
  }
  auto labels = [](const v1::Job& job, const v1::RankMetrics& r) {
    return PrometheusLabels{{"job_id", job.id()},
                            {"rank", absl::StrCat(r.rank())}};
  };
  for (const RankGauge& g : gauges) {
    out.Family(g.name, "gauge", g.help);
    for (const auto& [job, r] : ranks)
      out.Sample(labels(*job, *r), g.value(*r));
  }
  out.Family("gradsync_rank_step_time_seconds", "gauge",
             "Quantiles of the rank's step time over its last 1,000 steps.");
  for (const auto& [job, r] : ranks) {
    PrometheusLabels l = labels(*job, *r);
    l.emplace_back("quantile", "0.5");
    out.Sample(l, r->p50_step_ms() / kMsPerSecond);
    l.back().second = "0.99";
    out.Sample(l, r->p99_step_ms() / kMsPerSecond);
  }
  out.Family("gradsync_rank_phase_seconds", "gauge",
             "Mean time per step the rank spends waiting for data, computing "
             "and in exposed all-reduce, over its last 1,000 steps.");
  for (const auto& [job, r] : ranks) {
    const std::pair<const char*, double> phases[] = {
        {"data_wait", r->mean_data_wait_ms()},
        {"compute", r->mean_compute_ms()},
        {"allreduce", r->mean_allreduce_ms()}};
    for (const auto& [phase, ms] : phases) {
      PrometheusLabels l = labels(*job, *r);
      l.emplace_back("phase", phase);
      out.Sample(l, ms / kMsPerSecond);
    }
  }
}

void WriteRpcs(const MetricsView& view, PrometheusText& out) {
  out.Family(
      "gradsync_grpc_server_handled_total", "counter",
      "gRPC calls the coordinator completed, by method and status code.");
  for (const RpcStats::Method& m : view.rpcs) {
    for (const auto& [code, n] : m.codes) {
      out.Sample({{"method", m.name}, {"code", code}}, static_cast<double>(n));
    }
  }
  out.Family("gradsync_grpc_server_handling_seconds", "histogram",
             "Time from a call's arrival to its status, by method (streams "
             "and waiting calls count their whole length).");
  for (const RpcStats::Method& m : view.rpcs) {
    for (size_t i = 0; i < RpcStats::kBuckets.size(); ++i) {
      out.Sample({{"method", m.name},
                  {"le", FormatSampleValue(RpcStats::kBuckets[i])}},
                 static_cast<double>(m.bucket_counts[i]), "_bucket");
    }
    out.Sample({{"method", m.name}, {"le", "+Inf"}},
               static_cast<double>(m.count), "_bucket");
    out.Sample({{"method", m.name}}, m.sum_seconds, "_sum");
    out.Sample({{"method", m.name}}, static_cast<double>(m.count), "_count");
  }
}

}  // namespace

MetricsView CollectMetricsView(CoordinatorServer& server) {
  MetricsView view;
  Coordinator& coordinator = server.coordinator();
  std::string token;
  do {
    absl::StatusOr<Coordinator::JobPage> page =
        coordinator.ListJobs(Coordinator::kMaxPageSize, token);
    if (!page.ok()) break;  // jobs deleted under a page token: what we have
    for (v1::Job& job : page->jobs) view.jobs.push_back(std::move(job));
    token = page->next_page_token;
  } while (!token.empty());
  view.workers = coordinator.ListWorkers();
  for (const v1::Job& job : view.jobs) {
    int64_t bytes = 0;
    for (const SnapshotInfo& s : server.snapshots().List(job.id())) {
      bytes += s.size;
    }
    if (bytes > 0) view.snapshot_bytes[job.id()] = bytes;
  }
  view.rpcs = server.rpc_stats().Methods();
  view.now_unix_ms = absl::ToUnixMillis(absl::Now());
  return view;
}

std::string RenderMetrics(const MetricsView& view) {
  PrometheusText out;
  WriteStateCounts(view, out);
  WriteJobs(view, out);
  WriteRanks(view, out);
  WriteRpcs(view, out);
  return out.text();
}

}  // namespace gradsync
