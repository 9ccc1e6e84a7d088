// Control-plane capacity benchmark (not a test).
//
// Drives a `gradsync-coordinator` child process over gRPC like a cluster
// would, and reads its CPU time and memory from /proc:
// 1. Fleet: N simulated workers register (spread over --ramp seconds) and
//    heartbeat at 1 Hz, open loop (asynchronous calls sent when due, so a
//    slow answer does not delay the next beat), while K clients hammer one
//    job's key-value store with set/get and W watchers (as `gradsync
//    watch`) stream that job, whose rank reports a step every 100 ms.
//    Reports p50/p99 latency and ops/s of each call, watch event delivery
//    latency, and how many workers the failure detector wrongly declared
//    dead.
// 2. Rendezvous (--rendezvous-ranks R): the bootstrap of an R-rank job
//    against gradsync and against c10d's TCPStore (rendezvous_bench.h).
//    --gloo-ranks G: real gloo communicators of a G-rank job, bootstrapped
//    through the coordinator (RemoteStore) against c10d's ProcessGroupGloo
//    through a TCPStore (rendezvous_bench.h).
// 3. Store throughput: closed-loop set+get through RemoteStore (unary calls,
//    then its StoreSession stream) and against c10d's TCPStore at the same
//    client count and value size.
// All side by side in the same run.
//
// Usage: gradsync-bench-control-plane [--workers 100,1000] [--seconds 10]
//            [--ramp 5] [--kv-clients 2] [--client-threads 8]
//            [--watchers 50] [--rendezvous-ranks 1024] [--gloo-ranks 0]
//            [--store-clients 2]
//            [--coordinator build/bin/gradsync-coordinator]
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/coordinator_process.h"
#include "bench/latencies.h"
#include "bench/rendezvous_bench.h"
#include "bench/tcp_store.h"
#include "coordinator/client/remote_store.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync::bench {
namespace {

using v1::WorkerService;

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
  const v1::SubmitJobRequest submit = MlpJob("kv-bench", dataset, 1);
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

// The store of the KV job's attempt as its rank 0 sees it (what a worker's
// bootstrap uses), on a channel of its own.
std::unique_ptr<RemoteStore> KvStore(const std::string& address,
                                     const KvJob& kv,
                                     RemoteStoreOptions options = {}) {
  v1::TaskRef task;
  task.set_worker_id(kv.worker_id);
  task.set_job_id(kv.job_id);
  task.set_attempt(kv.attempt);
  task.set_rank(0);
  return std::make_unique<RemoteStore>(
      WorkerService::NewStub(OwnChannel(address)), task, kv.key, options);
}

// Closed-loop set+get on distinct keys; returns the latencies of each op.
void KvClient(Store& store, int id, absl::Time end, Latencies& sets,
              Latencies& gets) {
  std::vector<double> s_lat, g_lat;
  const std::string value(64, 'v');
  for (int i = 0; absl::Now() < end; ++i) {
    // (Not ending in a number: such keys belong to that rank, key_owner.h.)
    const std::string key = absl::StrCat("c", id, "/", i % 1000, "/v");
    absl::Time t = absl::Now();
    if (absl::Status s = store.Set(key, value); !s.ok()) {
      std::fprintf(stderr, "store set failed: %s\n", s.ToString().c_str());
      break;
    }
    s_lat.push_back(MsSince(t));
    t = absl::Now();
    if (absl::StatusOr<std::string> v = store.Get(key, absl::Seconds(10));
        !v.ok()) {
      std::fprintf(stderr, "store get failed: %s\n",
                   v.status().ToString().c_str());
      break;
    }
    g_lat.push_back(MsSince(t));
  }
  sets.Merge(s_lat);
  gets.Merge(g_lat);
}

// A WorkerService stub on its own channel, as a separate host would have.
std::unique_ptr<WorkerService::Stub> NewWorkerStub(const std::string& address) {
  return WorkerService::NewStub(OwnChannel(address));
}

// A coordinator child process (exits the benchmark if it cannot start).
std::unique_ptr<CoordinatorProcess> StartCoordinator(
    const std::string& binary, const std::vector<std::string>& args = {}) {
  auto process = CoordinatorProcess::Start(binary, args);
  if (!process.ok()) {
    std::fprintf(stderr, "%s\n", process.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*process);
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

// Simulated workers of one client thread: registered when their turn in
// the ramp comes, then a heartbeat every second, sent asynchronously on the
// thread's channel; a second thread reaps the answers and their latency.
class FleetDriver {
 public:
  // Sends until `end`; latencies count for beats sent from `steady` on.
  FleetDriver(const std::string& address, absl::Time end, absl::Time steady)
      : stub_(NewWorkerStub(address)), end_(end), steady_(steady) {}

  // Simulated worker `index` registers at `due`.
  void AddWorker(int index, absl::Time due) {
    sims_.push_back({index, "", "", false});
    queue_.push({due, sims_.size() - 1});
  }

  // Runs until `end`, then waits for every answer.
  void Run() {
    std::thread reaper([this] { Reap(); });
    while (!queue_.empty() && queue_.top().due < end_) {
      const Due next = queue_.top();
      queue_.pop();
      const absl::Time now = absl::Now();
      if (next.due > now) absl::SleepFor(next.due - now);
      Sim& sim = sims_[next.sim];
      if (!sim.registered) {
        v1::RegisterWorkerRequest reg;
        reg.set_host(absl::StrCat("sim-", sim.index / 8));
        v1::RegisterWorkerResponse r;
        const absl::Time t0 = absl::Now();
        grpc::Status s = stub_->RegisterWorker(Ctx().get(), reg, &r);
        if (!s.ok()) {
          ++register_errors;
          continue;  // this simulated worker is gone
        }
        registers.Add(MsSince(t0));
        sim.id = r.worker_id();
        sim.key = r.worker_key();
        sim.registered = true;
        queue_.push({absl::Now() + absl::Seconds(1), next.sim});
        continue;
      }
      SendBeat(sim);
      queue_.push({next.due + absl::Seconds(1), next.sim});
    }
    sending_done_ = true;
    reaper.join();
  }

  Latencies registers, beats;
  std::atomic<int> register_errors{0}, beat_errors{0};

 private:
  struct Sim {
    int index;
    std::string id, key;
    bool registered;
  };
  struct Due {
    absl::Time due;
    size_t sim;
    bool operator<(const Due& o) const { return due > o.due; }  // min-heap
  };
  struct Beat {
    grpc::ClientContext ctx;
    v1::HeartbeatResponse response;
    grpc::Status status;
    absl::Time sent;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::HeartbeatResponse>>
        reader;
  };

  void SendBeat(const Sim& sim) {
    auto* beat = new Beat;
    beat->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    beat->ctx.AddMetadata(kWorkerKeyHeader, sim.key);
    v1::HeartbeatRequest hb;
    hb.mutable_task()->set_worker_id(sim.id);
    hb.set_state(v1::WORKER_STATE_IDLE);
    beat->sent = absl::Now();
    beat->reader = stub_->AsyncHeartbeat(&beat->ctx, hb, &cq_);
    beat->reader->Finish(&beat->response, &beat->status, beat);
    ++in_flight_;
  }

  void Reap() {
    std::vector<double> latencies;
    for (;;) {
      if (sending_done_ && in_flight_ == 0) break;
      void* tag = nullptr;
      bool ok = false;
      const auto wait =
          std::chrono::system_clock::now() + std::chrono::milliseconds(100);
      if (cq_.AsyncNext(&tag, &ok, wait) != grpc::CompletionQueue::GOT_EVENT) {
        continue;
      }
      std::unique_ptr<Beat> beat(static_cast<Beat*>(tag));
      --in_flight_;
      const double ms = MsSince(beat->sent);
      if (!ok || !beat->status.ok()) {
        ++beat_errors;
      } else if (beat->sent >= steady_) {
        latencies.push_back(ms);
      }
    }
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.Next(&tag, &ok)) delete static_cast<Beat*>(tag);
    beats.Merge(latencies);
  }

  std::unique_ptr<WorkerService::Stub> stub_;
  grpc::CompletionQueue cq_;
  const absl::Time end_, steady_;
  std::vector<Sim> sims_;
  std::priority_queue<Due> queue_;
  std::atomic<bool> sending_done_{false};
  std::atomic<int> in_flight_{0};
};

std::string DescribeUse(const CoordinatorProcess& coordinator,
                        double cpu_before, double seconds) {
  absl::StatusOr<ProcessUse> use = coordinator.Use();
  if (!use.ok()) return use.status().ToString();
  return absl::StrFormat(
      "CPU %.1f s over %.1f s (%.0f%% of one core), RSS %.0f MB (peak %.0f "
      "MB), %d threads",
      use->cpu_seconds - cpu_before, seconds,
      100 * (use->cpu_seconds - cpu_before) / seconds, use->rss_bytes / 1e6,
      use->peak_rss_bytes / 1e6, use->threads);
}

void RunFleet(const std::string& binary, int num_workers, double seconds,
              double ramp, int kv_clients, int client_threads, int watchers,
              const std::string& dataset) {
  // Room for the simulated workers and the store job's own.
  std::unique_ptr<CoordinatorProcess> coordinator = StartCoordinator(
      binary, {"--max-workers", std::to_string(num_workers + 1)});
  const std::string address = coordinator->address();
  auto job_stub = v1::JobService::NewStub(OwnChannel(address));

  std::atomic<bool> stop{false};
  std::thread kv_beater;
  auto kv_stub = NewWorkerStub(address);
  KvJob kv = StartKvJob(*kv_stub, *job_stub, dataset, stop, kv_beater);

  Latencies sets, gets, watch_events;
  const absl::Time start = absl::Now();
  // Latencies count once every worker has registered and beaten once.
  const absl::Time steady = start + absl::Seconds(ramp + 1);
  const absl::Time end = steady + absl::Seconds(seconds);
  const double cpu_before = [&] {
    absl::StatusOr<ProcessUse> use = coordinator->Use();
    return use.ok() ? use->cpu_seconds : 0;
  }();
  std::vector<std::unique_ptr<FleetDriver>> drivers;
  for (int t = 0; t < client_threads; ++t) {
    drivers.push_back(std::make_unique<FleetDriver>(address, end, steady));
  }
  for (int w = 0; w < num_workers; ++w) {
    drivers[w % client_threads]->AddWorker(
        w, start + absl::Seconds(ramp * w / num_workers));
  }
  std::vector<std::thread> threads;
  for (auto& d : drivers) threads.emplace_back([&d] { d->Run(); });
  std::vector<std::thread> kv_threads;
  for (int k = 0; k < kv_clients; ++k) {
    kv_threads.emplace_back(
        [&, k] { KvClient(*KvStore(address, kv), k, end, sets, gets); });
  }
  std::vector<std::thread> watch_threads;
  for (int i = 0; i < watchers; ++i) {
    watch_threads.emplace_back([&] {
      // Its own channel, as a separate CLI process would have.
      auto stub = v1::JobService::NewStub(OwnChannel(address));
      Watcher(*stub, kv.job_id, end, watch_events);
    });
  }
  for (auto& t : threads) t.join();
  for (auto& t : kv_threads) t.join();
  for (auto& t : watch_threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  const std::string use = DescribeUse(*coordinator, cpu_before, elapsed);

  v1::ListWorkersResponse list;
  job_stub->ListWorkers(Ctx("", 60).get(), v1::ListWorkersRequest(), &list);
  int dead = 0, listed = 0;
  for (const auto& w : list.workers()) {
    if (w.host().rfind("sim-", 0) != 0) continue;
    ++listed;
    if (w.state() == v1::WORKER_STATE_DEAD) ++dead;
  }
  stop = true;
  kv_beater.join();
  Latencies registers, beats;
  int register_errors = 0, beat_errors = 0;
  for (auto& d : drivers) {
    registers.Merge(d->registers.Values());
    beats.Merge(d->beats.Values());
    register_errors += d->register_errors;
    beat_errors += d->beat_errors;
  }
  const double steady_s = absl::ToDoubleSeconds(end - steady);
  std::printf(
      "\n== %d workers heartbeating at 1 Hz (registered over %.0f s) + %d KV "
      "clients + %d watchers, %.1f s steady ==\n",
      num_workers, ramp, kv_clients, watchers, steady_s);
  std::printf("  register:        %s, errors %d\n",
              registers.Describe(ramp > 0 ? ramp : 1).c_str(), register_errors);
  std::printf("  heartbeat:       %s, errors %d\n",
              beats.Describe(steady_s).c_str(), beat_errors);
  std::printf("  store set:       %s\n", sets.Describe(steady_s).c_str());
  std::printf("  store get:       %s\n", gets.Describe(steady_s).c_str());
  std::printf("  watch events:    %s (report to arrival)\n",
              watch_events.Describe(steady_s).c_str());
  std::printf("  declared dead:   %d of %d listed, %d simulated (must be 0)\n",
              dead, listed, num_workers);
  std::printf("  coordinator:     %s\n", use.c_str());
}

// Closed-loop set+get throughput of gradsync's store over gRPC, through
// the client a worker uses (RemoteStore, one per client thread).
double GradsyncStoreOps(const std::string& binary, int clients, double seconds,
                        const std::string& dataset,
                        const RemoteStoreOptions& options) {
  std::unique_ptr<CoordinatorProcess> coordinator = StartCoordinator(binary);
  const std::string address = coordinator->address();
  auto stub = NewWorkerStub(address);
  auto jobs = v1::JobService::NewStub(OwnChannel(address));
  std::atomic<bool> stop{false};
  std::thread beater;
  KvJob kv = StartKvJob(*stub, *jobs, dataset, stop, beater);
  Latencies sets, gets;
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      KvClient(*KvStore(address, kv, options), k, end, sets, gets);
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  stop = true;
  beater.join();
  return (sets.count() + gets.count()) / elapsed;
}

#if GRADSYNC_BENCH_WITH_TORCH
// Closed-loop set+get throughput of c10d::TCPStore, one client store per
// thread against one server store, same keys and value size.
double TcpStoreOps(int clients, double seconds) {
  const std::unique_ptr<c10d::TCPStore> server = TcpStoreServer();
  const uint16_t port = server->getPort();
  std::atomic<int64_t> ops{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      const auto store = TcpStoreClient(port, c10d::Store::kDefaultTimeout);
      c10d::TCPStore& client = *store;
      const std::vector<uint8_t> value(64, 'v');
      int64_t n = 0;
      for (int i = 0; absl::Now() < end; ++i) {
        const std::string key = absl::StrCat("c", k, "/", i % 1000, "/v");
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
  double ramp = 5;
  int kv_clients = 2;
  int client_threads = 8;
  int watchers = 50;
  int rendezvous_ranks = 1024;
  int gloo_ranks = 0;
  int store_clients = 2;
  std::string coordinator = gradsync::bench::CoordinatorBesideSelf();
  CLI::App app{"gradsync control-plane capacity benchmark"};
  app.add_option("--workers", workers_list,
                 "simulated worker counts (empty: no fleet scenario)")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "steady-state length of each scenario")
      ->capture_default_str();
  app.add_option("--ramp", ramp, "seconds over which the workers register")
      ->capture_default_str();
  app.add_option("--kv-clients", kv_clients, "closed-loop store clients")
      ->capture_default_str();
  app.add_option("--client-threads", client_threads,
                 "threads driving the simulated workers")
      ->capture_default_str();
  app.add_option("--watchers", watchers, "WatchJob streams on the job")
      ->capture_default_str();
  app.add_option("--rendezvous-ranks", rendezvous_ranks,
                 "ranks of the bootstrap scenario (0: skip it)")
      ->capture_default_str();
  app.add_option("--gloo-ranks", gloo_ranks,
                 "ranks of the real gloo bootstrap scenario (0: skip it)")
      ->capture_default_str();
  app.add_option("--store-clients", store_clients,
                 "closed-loop clients of the store throughput comparison")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--coordinator", coordinator, "gradsync-coordinator binary")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // A thread and a socket per rank, both ends in this process for TCPStore.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  const std::string dataset = gradsync::bench::MakeDataset();
  std::printf(
      "gradsync control-plane benchmark: coordinator process on loopback, "
      "%u hardware threads\n",
      std::thread::hardware_concurrency());
  for (absl::string_view n :
       absl::StrSplit(workers_list, ',', absl::SkipEmpty())) {
    gradsync::bench::RunFleet(coordinator, std::stoi(std::string(n)), seconds,
                              ramp, kv_clients, client_threads, watchers,
                              dataset);
  }
  // One bootstrap scenario's figures: each side's times to its rank, to
  // `have` and to `past`, the coordinator's use, and the ratio of the two
  // sides' times to `past`.
  using gradsync::bench::RendezvousResult;
  auto report = [](const RendezvousResult& ours, const char* them,
                   const RendezvousResult& theirs, const char* have,
                   const char* past) {
    for (const auto& [who, r] :
         {std::pair<std::string, const RendezvousResult&>{
              "gradsync (from submit):", ours},
          {absl::StrCat(them, ":"), theirs}}) {
      std::printf(
          "  %-26s ranks know their rank %.0f ms, %s %.0f ms, %s %.0f ms; "
          "errors %d%s%s\n",
          who.c_str(), r.assigned_ms, have, r.addresses_ms, past, r.barrier_ms,
          r.errors, r.errors ? ": " : "", r.first_error.c_str());
    }
    std::printf("  %-26s CPU %.2f s, peak RSS %.0f MB\n",
                "gradsync coordinator:", ours.server_cpu_seconds,
                ours.server_peak_rss_mb);
    if (ours.errors == 0 && theirs.errors == 0) {
      std::printf("  ratio %s / gradsync time to %s: %.2f\n", them, past,
                  theirs.barrier_ms / ours.barrier_ms);
    }
  };
  if (rendezvous_ranks > 0) {
    std::printf(
        "\n== bootstrap of a %d-rank job: address in, every address out, "
        "barrier ==\n",
        rendezvous_ranks);
    const auto ours = gradsync::bench::GradsyncRendezvous(
        coordinator, rendezvous_ranks, dataset);
    const auto theirs = gradsync::bench::TcpStoreRendezvous(rendezvous_ranks);
    report(ours, "c10d TCPStore", theirs, "hold every address",
           "all past the barrier");
  }
  if (gloo_ranks > 0) {
    std::printf(
        "\n== gloo bootstrap of a %d-rank job: full mesh connected, then a "
        "1-float all-reduce ==\n",
        gloo_ranks);
    const auto ours = gradsync::bench::GradsyncGlooBootstrap(
        coordinator, gloo_ranks, dataset);
    const auto theirs = gradsync::bench::TorchGlooBootstrap(gloo_ranks);
    report(ours, "c10d ProcessGroupGloo", theirs, "mesh connected",
           "all-reduce done");
  }
  std::printf(
      "\n== store set+get, %d closed-loop clients, 64-byte values, "
      "%.0f s each ==\n",
      store_clients, seconds / 2);
  gradsync::RemoteStoreOptions unary;
  unary.stream = false;
  const double ours_unary = gradsync::bench::GradsyncStoreOps(
      coordinator, store_clients, seconds / 2, dataset, unary);
  std::printf("  gradsync, unary calls:      %.0f ops/s\n", ours_unary);
  const double ours = gradsync::bench::GradsyncStoreOps(
      coordinator, store_clients, seconds / 2, dataset, {});
  std::printf(
      "  gradsync, StoreSession:     %.0f ops/s (RemoteStore's default)\n",
      ours);
#if GRADSYNC_BENCH_WITH_TORCH
  const double theirs =
      gradsync::bench::TcpStoreOps(store_clients, seconds / 2);
  std::printf("  c10d TCPStore (LibTorch):   %.0f ops/s\n", theirs);
  std::printf("  ratio gradsync / TCPStore: %.2f (unary calls %.2f)\n",
              ours / theirs, ours_unary / theirs);
#else
  std::printf("  c10d TCPStore: not built (LibTorch not found)\n");
#endif
  std::filesystem::remove_all(dataset);
  return 0;
}
