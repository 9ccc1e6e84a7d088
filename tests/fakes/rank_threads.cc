#include "tests/fakes/rank_threads.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <thread>
#include <vector>

#include "foundation/store/memory_store.h"
#include "tests/fakes/rank_processes.h"
#include "worker/comm/create_communicator.h"

namespace gradsync {

namespace {

using MakeComm = std::function<absl::StatusOr<std::unique_ptr<Communicator>>(
    const CommOptions&)>;

void RunThreads(Backend backend, int world, absl::Duration timeout,
                const std::function<void(int, Communicator&)>& body,
                const MakeComm& make, std::shared_ptr<Store> store = nullptr) {
  if (store == nullptr) store = std::make_shared<MemoryStore>();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      CommOptions o;
      o.rank = r;
      o.size = world;
      o.store = store;
      o.timeout = timeout;
      o.cuda_device = RankGpu(r);
      auto comm = make(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), backend);
      body(r, **comm);
    });
  }
  for (std::thread& t : threads) t.join();
}

class SoloComm : public Communicator {
 public:
  SoloComm()
      : Communicator(0, 1, std::make_shared<MemoryStore>(), absl::Seconds(60)) {
  }
  Backend backend() const override { return Backend::kGloo; }
  absl::Status AllReduce(at::Tensor&, ReduceOp) override {
    Enter();
    return absl::OkStatus();
  }
  absl::Status Broadcast(at::Tensor&, int root) override {
    Enter();
    return root == 0 ? absl::OkStatus()
                     : absl::InvalidArgumentError("broadcast root outside 0");
  }
  absl::Status Barrier() override {
    Enter();
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::string>> AllGather(
      const std::string& mine) override {
    Enter();
    return std::vector<std::string>{mine};
  }

 protected:
  void AbortTransport() override {}  // nothing is ever in flight
};

}  // namespace

void RunRanks(Backend backend, int world, absl::Duration timeout,
              const std::function<void(int, Communicator&)>& body) {
  if (RanksRunAsProcesses(backend, world)) {
    RunRankProcesses(backend, world, timeout, body);
    return;
  }
  RunThreads(backend, world, timeout, body, [backend](const CommOptions& o) {
    return CreateCommunicator(backend, o);
  });
}

#if GRADSYNC_WITH_GLOO
void RunGlooRanks(int world, absl::Duration timeout,
                  const std::function<void(int, Communicator&)>& body,
                  const GlooOptions& gloo, std::shared_ptr<Store> store) {
  RunGlooRanks(
      world, timeout, body, [&gloo](int) { return gloo; }, std::move(store));
}

void RunGlooRanks(int world, absl::Duration timeout,
                  const std::function<void(int, Communicator&)>& body,
                  const std::function<GlooOptions(int rank)>& gloo_of,
                  std::shared_ptr<Store> store) {
  RunThreads(
      Backend::kGloo, world, timeout, body,
      [&gloo_of](const CommOptions& o) {
        return CreateGlooCommunicator(o, gloo_of(o.rank));
      },
      std::move(store));
}
#endif

c10::Device RankDevice(Backend backend, int rank) {
  return backend == Backend::kNccl
             ? c10::Device(c10::kCUDA, static_cast<int8_t>(RankGpu(rank)))
             : c10::Device(c10::kCPU);
}

std::string CannotRunRanks(Backend backend, int /*world*/) {
  if (backend != Backend::kNccl) return "";
  // is_available() is device_count() > 0, so it covers both causes.
  if (!torch::cuda::is_available()) {
    return "no GPU for NCCL (this LibTorch has no CUDA, or this machine has "
           "no GPU)";
  }
  return "";  // fewer GPUs than ranks: processes sharing them
}

absl::StatusOr<std::unique_ptr<Communicator>> SoloCommunicator() {
  return std::unique_ptr<Communicator>(new SoloComm());
}

}  // namespace gradsync
