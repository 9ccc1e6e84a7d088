#include "bench/rendezvous_bench.h"

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "bench/coordinator_process.h"
#include "bench/latencies.h"
#include "bench/tcp_store.h"
#include "coordinator/client/remote_store.h"
#include "gradsync/config.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

// The gloo bootstraps need the data plane (LibTorch and gloo) on both sides.
#define GRADSYNC_BENCH_GLOO (GRADSYNC_BENCH_WITH_TORCH && GRADSYNC_WITH_GLOO)
#if GRADSYNC_BENCH_GLOO
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "worker/comm/communicator.h"
#include "worker/comm/create_communicator.h"
#endif

namespace gradsync::bench {
namespace {

constexpr int kRanksPerHost = 8;
constexpr int64_t kWaitMs = 120000;

// Per-rank finish times (ms after the start) and the first error, written
// by the rank threads.
struct Timeline {
  explicit Timeline(int ranks)
      : assigned(ranks, 0), addresses(ranks, 0), past_barrier(ranks, 0) {}
  void Fail(const std::string& what) {
    absl::MutexLock lock(&mu);
    if (errors++ == 0) first_error = what;
  }
  void Fill(RendezvousResult& r) const {
    absl::MutexLock lock(&mu);
    auto max = [](const std::vector<double>& v) {
      return *std::max_element(v.begin(), v.end());
    };
    r.ranks = static_cast<int>(assigned.size());
    r.errors = errors;
    r.first_error = first_error;
    r.assigned_ms = max(assigned);
    r.addresses_ms = max(addresses);
    r.barrier_ms = max(past_barrier);
  }
  std::vector<double> assigned, addresses, past_barrier;
  mutable absl::Mutex mu;
  int errors ABSL_GUARDED_BY(mu) = 0;
  std::string first_error ABSL_GUARDED_BY(mu);
};

std::string AddressKey(int rank) { return absl::StrCat("addr/", rank); }

struct SimRank {
  std::string id, key;
  std::shared_ptr<v1::WorkerService::Stub> stub;  // its host's channel
};

// What a simulated rank does once it has its assignment (`task`), `start`
// being the submit and `index` its slot in the timeline.
using CoordinatorRank =
    std::function<void(const SimRank& sim, const v1::TaskRef& task, int ranks,
                       absl::Time start, Timeline& timeline, int index)>;

// Heartbeats for the assignment and runs `body` with it.
void AssignedRank(const SimRank& sim, int ranks, absl::Time start,
                  Timeline& timeline, int index, const CoordinatorRank& body) {
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id(sim.id);
  hb.set_state(v1::WORKER_STATE_IDLE);
  v1::HeartbeatResponse beat;
  grpc::Status s = sim.stub->Heartbeat(Ctx(sim.key).get(), hb, &beat);
  if (!s.ok() || beat.action() != v1::ACTION_RUN) {
    timeline.Fail(absl::StrCat("heartbeat of ", sim.id, ": ",
                               s.ok() ? "no assignment" : s.error_message()));
    return;
  }
  const v1::Assignment& a = beat.assignment();
  timeline.assigned[index] = MsSince(start);
  v1::TaskRef task;
  task.set_worker_id(sim.id);
  task.set_job_id(a.job_id());
  task.set_attempt(a.attempt());
  task.set_rank(a.rank());
  body(sim, task, ranks, start, timeline, index);
}

// The pattern: its address in, every address out with one multi-get, a
// barrier.
void AddressesAndBarrier(const SimRank& sim, const v1::TaskRef& task, int ranks,
                         absl::Time start, Timeline& timeline, int index) {
  v1::StoreSetRequest set;
  *set.mutable_task() = task;
  set.set_key(AddressKey(task.rank()));
  set.set_value(absl::StrCat("rdv-", task.rank() / kRanksPerHost, ":",
                             29500 + task.rank()));
  v1::StoreSetResponse set_r;
  grpc::Status s = sim.stub->StoreSet(Ctx(sim.key).get(), set, &set_r);
  v1::StoreMultiGetRequest get;
  *get.mutable_task() = task;
  for (int r = 0; r < ranks; ++r) get.add_keys(AddressKey(r));
  get.set_timeout_ms(kWaitMs);
  v1::StoreMultiGetResponse got;
  if (s.ok()) {
    s = sim.stub->StoreMultiGet(Ctx(sim.key, kWaitMs / 1000 + 10).get(), get,
                                &got);
  }
  if (!s.ok() || got.values_size() != ranks) {
    timeline.Fail(absl::StrCat("addresses of rank ", task.rank(), ": ",
                               s.error_message()));
    return;
  }
  timeline.addresses[index] = MsSince(start);
  v1::BarrierRequest barrier;
  *barrier.mutable_task() = task;
  barrier.set_name("bootstrap");
  barrier.set_timeout_ms(kWaitMs);
  v1::BarrierResponse passed;
  s = sim.stub->Barrier(Ctx(sim.key, kWaitMs / 1000 + 10).get(), barrier,
                        &passed);
  if (!s.ok()) {
    timeline.Fail(
        absl::StrCat("barrier of rank ", task.rank(), ": ", s.error_message()));
    return;
  }
  timeline.past_barrier[index] = MsSince(start);
}

#if GRADSYNC_BENCH_GLOO
// A real gloo communicator through the rank's RemoteStore, as a worker
// makes it, then a 1-float all-reduce over its mesh.
void GlooCommunicatorRank(const SimRank& sim, const v1::TaskRef& task,
                          int ranks, absl::Time start, Timeline& timeline,
                          int index) {
  CommOptions o;
  o.rank = task.rank();
  o.size = ranks;
  o.store = std::make_shared<RemoteStore>(sim.stub, task, sim.key);
  o.timeout = absl::Milliseconds(kWaitMs);
  auto comm = CreateCommunicator(Backend::kGloo, o);
  if (!comm.ok()) {
    timeline.Fail(comm.status().ToString());
    return;
  }
  timeline.addresses[index] = MsSince(start);
  at::Tensor one = torch::ones({1});
  const absl::Status s = (*comm)->AllReduce(one, ReduceOp::kSum);
  if (!s.ok() || one.item<float>() != ranks) {
    timeline.Fail(
        absl::StrCat("all-reduce of rank ", task.rank(), ": ", s.ToString()));
    return;
  }
  timeline.past_barrier[index] = MsSince(start);
}
#endif

// Starts `coordinator_binary`, registers `ranks` simulated workers, submits
// a `ranks`-rank job and runs `body` on every rank once it is assigned.
RendezvousResult OnCoordinator(const std::string& coordinator_binary, int ranks,
                               const std::string& dataset,
                               const CoordinatorRank& body) {
  RendezvousResult result;
  result.ranks = ranks;
  // The simulated workers do not heartbeat while they bootstrap (a real
  // worker does, from a thread of its own): a timeout longer than the run.
  auto coordinator = CoordinatorProcess::Start(coordinator_binary,
                                               {"--heartbeat-timeout", "600"});
  if (!coordinator.ok()) {
    result.errors = ranks;
    result.first_error = coordinator.status().ToString();
    return result;
  }
  const std::string address = (*coordinator)->address();
  std::vector<std::shared_ptr<v1::WorkerService::Stub>> hosts;
  for (int h = 0; h * kRanksPerHost < ranks; ++h) {
    hosts.push_back(v1::WorkerService::NewStub(OwnChannel(address)));
  }
  std::vector<SimRank> sims(ranks);
  {
    std::vector<std::thread> registering;
    for (int t = 0; t < 16; ++t) {
      registering.emplace_back([&, t] {
        for (int i = t; i < ranks; i += 16) {
          v1::RegisterWorkerRequest reg;
          reg.set_host(absl::StrCat("rdv-", i / kRanksPerHost));
          v1::RegisterWorkerResponse r;
          sims[i].stub = hosts[i / kRanksPerHost];
          if (sims[i].stub->RegisterWorker(Ctx().get(), reg, &r).ok()) {
            sims[i].id = r.worker_id();
            sims[i].key = r.worker_key();
          }
        }
      });
    }
    for (auto& t : registering) t.join();
  }
  auto jobs = v1::JobService::NewStub(OwnChannel(address));
  Timeline timeline(ranks);
  absl::Notification go;
  absl::Time start;
  std::vector<std::thread> threads;
  for (int i = 0; i < ranks; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      AssignedRank(sims[i], ranks, start, timeline, i, body);
    });
  }
  const absl::StatusOr<ProcessUse> before = (*coordinator)->Use();
  const v1::SubmitJobRequest submit =
      MlpJob("rendezvous-bench", dataset, ranks);
  v1::Job job;
  start = absl::Now();
  grpc::Status s = jobs->SubmitJob(Ctx().get(), submit, &job);
  if (!s.ok()) timeline.Fail(absl::StrCat("submit: ", s.error_message()));
  go.Notify();
  for (auto& t : threads) t.join();
  timeline.Fill(result);
  const absl::StatusOr<ProcessUse> after = (*coordinator)->Use();
  if (before.ok() && after.ok()) {
    result.server_cpu_seconds = after->cpu_seconds - before->cpu_seconds;
    result.server_peak_rss_mb = after->peak_rss_bytes / 1e6;
  }
  return result;
}

#if GRADSYNC_BENCH_WITH_TORCH
// Runs `body(rank, port, start, timeline)` on `ranks` threads against one
// TCPStore server in this process; an exception fails the rank.
RendezvousResult OnTcpStore(
    int ranks,
    const std::function<void(int, uint16_t, absl::Time, Timeline&)>& body) {
  RendezvousResult result;
  const std::unique_ptr<c10d::TCPStore> server = TcpStoreServer();
  const uint16_t port = server->getPort();
  Timeline timeline(ranks);
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank, port, start, timeline);
      } catch (const std::exception& e) {
        timeline.Fail(absl::StrCat("rank ", rank, ": ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  timeline.Fill(result);
  return result;
}
#endif

[[maybe_unused]] RendezvousResult NotBuilt(int ranks) {
  RendezvousResult result;
  result.ranks = ranks;
  result.errors = ranks;
  result.first_error = "not built (needs LibTorch and gloo)";
  return result;
}

}  // namespace

RendezvousResult GradsyncRendezvous(const std::string& coordinator_binary,
                                    int ranks, const std::string& dataset) {
  return OnCoordinator(coordinator_binary, ranks, dataset, AddressesAndBarrier);
}

RendezvousResult GradsyncGlooBootstrap(const std::string& coordinator_binary,
                                       int ranks, const std::string& dataset) {
#if GRADSYNC_BENCH_GLOO
  return OnCoordinator(coordinator_binary, ranks, dataset,
                       GlooCommunicatorRank);
#else
  (void)coordinator_binary;
  (void)dataset;
  return NotBuilt(ranks);
#endif
}

RendezvousResult TcpStoreRendezvous(int ranks) {
#if GRADSYNC_BENCH_WITH_TORCH
  std::vector<std::string> keys;
  for (int r = 0; r < ranks; ++r) keys.push_back(AddressKey(r));
  return OnTcpStore(ranks, [&](int rank, uint16_t port, absl::Time start,
                               Timeline& timeline) {
    const auto store = TcpStoreClient(port, std::chrono::milliseconds(kWaitMs));
    c10d::TCPStore& client = *store;
    timeline.assigned[rank] = MsSince(start);
    const std::string address =
        absl::StrCat("rdv-", rank / kRanksPerHost, ":", 29500 + rank);
    client.set(AddressKey(rank),
               std::vector<uint8_t>(address.begin(), address.end()));
    client.wait(keys);
    for (const std::string& key : keys) (void)client.get(key);
    timeline.addresses[rank] = MsSince(start);
    if (client.add("bootstrap/arrived", 1) == ranks) {
      client.set("bootstrap/done", std::vector<uint8_t>{1});
    }
    client.wait({"bootstrap/done"});
    timeline.past_barrier[rank] = MsSince(start);
  });
#else
  return NotBuilt(ranks);
#endif
}

RendezvousResult TorchGlooBootstrap(int ranks) {
#if GRADSYNC_BENCH_GLOO
  return OnTcpStore(ranks, [&](int rank, uint16_t port, absl::Time start,
                               Timeline& timeline) {
    const std::chrono::milliseconds timeout(kWaitMs);
    const c10::intrusive_ptr<c10d::Store> store = TcpStoreClient(port, timeout);
    timeline.assigned[rank] = MsSince(start);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(
        c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    options->threads = 1;
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, ranks,
                                                             options);
    timeline.addresses[rank] = MsSince(start);
    std::vector<at::Tensor> one = {torch::ones({1})};
    group->allreduce(one)->wait();
    if (one[0].item<float>() != ranks) {
      throw std::runtime_error("all-reduce gave the wrong sum");
    }
    timeline.past_barrier[rank] = MsSince(start);
  });
#else
  return NotBuilt(ranks);
#endif
}

}  // namespace gradsync::bench
