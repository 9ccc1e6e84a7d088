// Control-plane capacity benchmark (not a test).
//
// Starts a coordinator in this process on a loopback port and drives it over
// gRPC like a cluster would: N simulated workers register and heartbeat at
// 1 Hz while K clients hammer one job's key-value store with set/get and W
// watchers (as `gradsync watch`) stream that job, whose rank reports a step
// every 100 ms. Reports p50/p99 latency and ops/s of heartbeats and store
// calls, watch event delivery latency, and how many workers the failure
// detector wrongly declared dead. Then compares the
// store's closed-loop set+get throughput with c10d's TCPStore (LibTorch) at
// the same client count and value size, side by side in the same run.
//
// Usage: gradsync-bench-control-plane [--workers 100,1000] [--seconds 10]
//                                     [--kv-clients 2] [--client-threads 8]
//                                     [--watchers 50]
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/control/metrics_aggregator.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/server.h"
#include "coordinator/wire/secrets.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

#if GRADSYNC_BENCH_WITH_TORCH
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace gradsync::bench {
namespace {

using v1::WorkerService;

// Latencies in milliseconds collected from several threads.
class Latencies {
 public:
  void Add(double ms) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(ms);
  }
  void Merge(const std::vector<double>& v) {
    std::lock_guard<std::mutex> lock(mu_);
    values_.insert(values_.end(), v.begin(), v.end());
  }
  size_t count() const { return values_.size(); }
  std::string Describe(double seconds) const {
    return absl::StrFormat("%zu ops, %.0f ops/s, p50 %.3f ms, p99 %.3f ms",
                           values_.size(), values_.size() / seconds,
                           Quantile(values_, 0.5), Quantile(values_, 0.99));
  }

 private:
  std::mutex mu_;
  std::vector<double> values_;
};

double MsSince(absl::Time start) {
  return absl::ToDoubleMilliseconds(absl::Now() - start);
}

// A call context with a 10 s deadline, acting as the worker holding `key`.
std::unique_ptr<grpc::ClientContext> Ctx(const std::string& key = "") {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(10));
  if (!key.empty()) ctx->AddMetadata(kWorkerKeyHeader, key);
  return ctx;
}

std::string MakeDataset() {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / absl::StrCat("gradsync_bench_", getpid());
  fs::create_directories(dir / "train" / "a");
  std::ofstream(dir / "train" / "a" / "0.png") << "x";
  return dir.string();
}

struct KvJob {
  std::string job_id;
  int attempt = 0;
  std::string worker_id, key;  // its rank 0
};

// Registers one worker, submits a 1-rank job and acknowledges it, so the
// job's store is live. A thread keeps that worker's heartbeats going and
// reports a step every 100 ms (what watchers receive).
KvJob StartKvJob(WorkerService::Stub& workers, v1::JobService::Stub& jobs,
                 const std::string& dataset, std::atomic<bool>& stop,
                 std::thread& beater) {
  v1::RegisterWorkerRequest reg;
  reg.set_host("kv-host");
  v1::RegisterWorkerResponse id;
  workers.RegisterWorker(Ctx().get(), reg, &id);
  v1::SubmitJobRequest submit;
  v1::JobSpec* spec = submit.mutable_spec();
  spec->set_name("kv-bench");
  spec->mutable_dataset()->set_path(dataset);
  spec->set_model("mlp");
  spec->set_batch_size(1);
  spec->mutable_world_size()->set_max_workers(1);
  v1::Job job;
  grpc::Status s = jobs.SubmitJob(Ctx().get(), submit, &job);
  if (!s.ok()) {
    std::fprintf(stderr, "submit failed: %s\n", s.error_message().c_str());
    std::exit(1);
  }
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id(id.worker_id());
  v1::HeartbeatResponse r;
  workers.Heartbeat(Ctx(id.worker_key()).get(), hb, &r);
  KvJob kv{r.assignment().job_id(), r.assignment().attempt(), id.worker_id(),
           id.worker_key()};
  hb.set_state(v1::WORKER_STATE_RUNNING);
  hb.mutable_task()->set_job_id(kv.job_id);
  hb.mutable_task()->set_attempt(kv.attempt);
  beater = std::thread([&workers, hb, kv, &stop] {
    for (int64_t step = 1; !stop; ++step) {
      if (step % 3 == 0) {
        v1::HeartbeatResponse ignored;
        workers.Heartbeat(Ctx(kv.key).get(), hb, &ignored);
      }
      v1::ReportMetricsRequest report;
      report.mutable_task()->set_worker_id(kv.worker_id);
      report.mutable_task()->set_job_id(kv.job_id);
      report.mutable_task()->set_attempt(kv.attempt);
      v1::StepMetrics* m = report.add_steps();
      m->set_step(step);
      m->set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
      v1::ReportMetricsResponse ignored;
      workers.ReportMetrics(Ctx(kv.key).get(), report, &ignored);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  return kv;
}

// Closed-loop set+get on distinct keys; returns the latencies of each op.
void KvClient(WorkerService::Stub& stub, const KvJob& kv, int id,
              absl::Time end, Latencies& sets, Latencies& gets) {
  std::vector<double> s_lat, g_lat;
  const std::string value(64, 'v');
  for (int i = 0; absl::Now() < end; ++i) {
    const std::string key = absl::StrCat("c", id, "/", i % 1000);
    v1::StoreSetRequest set;
    set.mutable_task()->set_worker_id(kv.worker_id);
    set.mutable_task()->set_job_id(kv.job_id);
    set.mutable_task()->set_attempt(kv.attempt);
    set.set_key(key);
    set.set_value(value);
    v1::StoreSetResponse set_r;
    absl::Time t = absl::Now();
    if (!stub.StoreSet(Ctx(kv.key).get(), set, &set_r).ok()) break;
    s_lat.push_back(MsSince(t));
    v1::StoreGetRequest get;
    get.mutable_task()->set_worker_id(kv.worker_id);
    get.mutable_task()->set_job_id(kv.job_id);
    get.mutable_task()->set_attempt(kv.attempt);
    get.set_key(key);
    v1::StoreGetResponse get_r;
    t = absl::Now();
    if (!stub.StoreGet(Ctx(kv.key).get(), get, &get_r).ok()) break;
    g_lat.push_back(MsSince(t));
  }
  sets.Merge(s_lat);
  gets.Merge(g_lat);
}

// A WorkerService stub on its own channel, as a separate host would have.
std::unique_ptr<WorkerService::Stub> NewWorkerStub(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  return WorkerService::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
}

// A coordinator on a free loopback port, with default options.
std::unique_ptr<CoordinatorServer> StartServer() {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  auto server = CoordinatorServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*server);
}

// A `gradsync watch` of the job until `end`: latency of each step event
// (report time to arrival).
void Watcher(v1::JobService::Stub& jobs, const std::string& job_id,
             absl::Time end, Latencies& events) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(end));
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  auto reader = jobs.WatchJob(&ctx, request);
  std::vector<double> lat;
  v1::JobEvent event;
  while (reader->Read(&event)) {
    if (event.has_step()) {
      lat.push_back(absl::ToUnixMillis(absl::Now()) -
                    event.step().time_unix_ms());
    }
  }
  (void)reader->Finish();  // DEADLINE_EXCEEDED at `end`
  events.Merge(lat);
}

void RunScenario(int num_workers, double seconds, int kv_clients,
                 int client_threads, int watchers, const std::string& dataset) {
  std::unique_ptr<CoordinatorServer> server = StartServer();
  const std::string address = server->local_address();
  // One channel per client thread, as separate hosts would have.
  auto make_stub = [&] { return NewWorkerStub(address); };
  auto job_stub = v1::JobService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));

  std::atomic<bool> stop{false};
  std::thread kv_beater;
  auto kv_stub = make_stub();
  KvJob kv = StartKvJob(*kv_stub, *job_stub, dataset, stop, kv_beater);

  Latencies registers, beats, sets, gets, watch_events;
  std::atomic<int> beat_errors{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int t = 0; t < client_threads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = make_stub();
      struct Sim {
        std::string id, key;
        absl::Time due;
      };
      std::vector<Sim> sims;
      std::vector<double> reg_lat, beat_lat;
      for (int w = t; w < num_workers; w += client_threads) {
        v1::RegisterWorkerRequest reg;
        reg.set_host(absl::StrCat("sim-", w / 8));
        v1::RegisterWorkerResponse r;
        const absl::Time t0 = absl::Now();
        if (!stub->RegisterWorker(Ctx().get(), reg, &r).ok()) continue;
        reg_lat.push_back(MsSince(t0));
        // Spread first heartbeats over one second.
        sims.push_back({r.worker_id(), r.worker_key(),
                        start + absl::Milliseconds(1000.0 * w / num_workers)});
      }
      registers.Merge(reg_lat);
      for (size_t i = 0; !sims.empty(); i = (i + 1) % sims.size()) {
        Sim& sim = sims[i];
        if (sim.due >= end) break;
        const absl::Time now = absl::Now();
        if (sim.due > now) absl::SleepFor(sim.due - now);
        v1::HeartbeatRequest hb;
        hb.mutable_task()->set_worker_id(sim.id);
        hb.set_state(v1::WORKER_STATE_IDLE);
        v1::HeartbeatResponse r;
        const absl::Time t0 = absl::Now();
        if (stub->Heartbeat(Ctx(sim.key).get(), hb, &r).ok()) {
          beat_lat.push_back(MsSince(t0));
        } else {
          ++beat_errors;
        }
        sim.due += absl::Seconds(1);
      }
      beats.Merge(beat_lat);
    });
  }
  std::vector<std::thread> kv_threads;
  for (int k = 0; k < kv_clients; ++k) {
    kv_threads.emplace_back([&, k] {
      auto stub = make_stub();
      KvClient(*stub, kv, k, end, sets, gets);
    });
  }
  std::vector<std::thread> watch_threads;
  for (int i = 0; i < watchers; ++i) {
    watch_threads.emplace_back([&] {
      // Its own channel, as a separate CLI process would have.
      grpc::ChannelArguments args;
      args.SetInt("grpc.use_local_subchannel_pool", 1);
      auto stub = v1::JobService::NewStub(grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args));
      Watcher(*stub, kv.job_id, end, watch_events);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& t : kv_threads) t.join();
  for (auto& t : watch_threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);

  v1::ListWorkersResponse list;
  job_stub->ListWorkers(Ctx().get(), v1::ListWorkersRequest(), &list);
  int dead = 0;
  for (const auto& w : list.workers()) {
    if (w.state() == v1::WORKER_STATE_DEAD) ++dead;
  }
  stop = true;
  kv_beater.join();
  std::printf(
      "\n== %d workers heartbeating at 1 Hz + %d KV clients + %d watchers, "
      "%.1f s ==\n",
      num_workers, kv_clients, watchers, elapsed);
  std::printf("  register:        %s\n", registers.Describe(elapsed).c_str());
  std::printf("  heartbeat:       %s, errors %d\n",
              beats.Describe(elapsed).c_str(), beat_errors.load());
  std::printf("  store set:       %s\n", sets.Describe(elapsed).c_str());
  std::printf("  store get:       %s\n", gets.Describe(elapsed).c_str());
  std::printf("  watch events:    %s (report to arrival)\n",
              watch_events.Describe(elapsed).c_str());
  std::printf("  declared dead:   %d of %d (must be 0)\n", dead, num_workers);
  server->Shutdown();
}

// Closed-loop set+get throughput of gradsync's store over gRPC.
double GradsyncStoreOps(int clients, double seconds,
                        const std::string& dataset) {
  std::unique_ptr<CoordinatorServer> server = StartServer();
  const std::string address = server->local_address();
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = WorkerService::NewStub(channel);
  auto jobs = v1::JobService::NewStub(channel);
  std::atomic<bool> stop{false};
  std::thread beater;
  KvJob kv = StartKvJob(*stub, *jobs, dataset, stop, beater);
  Latencies sets, gets;
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      auto own = NewWorkerStub(address);
      KvClient(*own, kv, k, end, sets, gets);
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  stop = true;
  beater.join();
  server->Shutdown();
  return (sets.count() + gets.count()) / elapsed;
}

#if GRADSYNC_BENCH_WITH_TORCH
// Closed-loop set+get throughput of c10d::TCPStore, one client store per
// thread against one server store, same keys and value size.
double TcpStoreOps(int clients, double seconds) {
  c10d::TCPStoreOptions server_opts;
  server_opts.port = 0;
  server_opts.isServer = true;
  server_opts.waitWorkers = false;
  c10d::TCPStore server("127.0.0.1", server_opts);
  const uint16_t port = server.getPort();
  std::atomic<int64_t> ops{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      c10d::TCPStoreOptions opts;
      opts.port = port;
      opts.waitWorkers = false;
      c10d::TCPStore client("127.0.0.1", opts);
      const std::vector<uint8_t> value(64, 'v');
      int64_t n = 0;
      for (int i = 0; absl::Now() < end; ++i) {
        const std::string key = absl::StrCat("c", k, "/", i % 1000);
        client.set(key, value);
        (void)client.get(key);
        n += 2;
      }
      ops += n;
    });
  }
  for (auto& t : threads) t.join();
  return ops / absl::ToDoubleSeconds(absl::Now() - start);
}
#endif

}  // namespace
}  // namespace gradsync::bench

int main(int argc, char** argv) {
  std::string workers_list = "100,1000";
  double seconds = 10;
  int kv_clients = 2;
  int client_threads = 8;
  int watchers = 50;
  CLI::App app{"gradsync control-plane capacity benchmark"};
  app.add_option("--workers", workers_list, "simulated worker counts")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "duration of each scenario")
      ->capture_default_str();
  app.add_option("--kv-clients", kv_clients, "closed-loop store clients")
      ->capture_default_str();
  app.add_option("--client-threads", client_threads,
                 "threads driving the simulated workers")
      ->capture_default_str();
  app.add_option("--watchers", watchers, "WatchJob streams on the job")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string dataset = gradsync::bench::MakeDataset();
  std::printf(
      "gradsync control-plane benchmark: in-process coordinator on "
      "loopback, %u hardware threads\n",
      std::thread::hardware_concurrency());
  for (absl::string_view n : absl::StrSplit(workers_list, ',')) {
    gradsync::bench::RunScenario(std::stoi(std::string(n)), seconds, kv_clients,
                                 client_threads, watchers, dataset);
  }
  std::printf(
      "\n== store set+get, %d closed-loop clients, 64-byte values, "
      "%.0f s each ==\n",
      std::max(kv_clients, 1), seconds / 2);
  const double ours = gradsync::bench::GradsyncStoreOps(std::max(kv_clients, 1),
                                                        seconds / 2, dataset);
  std::printf("  gradsync store (gRPC):   %.0f ops/s\n", ours);
#if GRADSYNC_BENCH_WITH_TORCH
  const double theirs =
      gradsync::bench::TcpStoreOps(std::max(kv_clients, 1), seconds / 2);
  std::printf("  c10d TCPStore (LibTorch): %.0f ops/s\n", theirs);
  std::printf("  ratio gradsync / TCPStore: %.2f\n", ours / theirs);
#else
  std::printf("  c10d TCPStore: not built (LibTorch not found)\n");
#endif
  std::filesystem::remove_all(dataset);
  return 0;
}
