// Both communicators with W ranks as threads over an in-memory store: gloo
// everywhere, NCCL (one GPU per rank) where this machine has W GPUs; the
// NCCL cases skip otherwise and say so.
#include "worker/comm/communicator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "gradsync/config.h"
#include "worker/devices.h"

namespace gradsync {
namespace {

int GpuCount() {
  static const int count = static_cast<int>(DiscoverDevices().cuda.size());
  return count;
}

// Runs body(rank, communicator) on `world` threads sharing one store; rank r
// of an NCCL group uses GPU r.
void RunRanks(const std::string& backend, int world, absl::Duration timeout,
              const std::function<void(int, Communicator&)>& body) {
  auto store = std::make_shared<InMemoryStore>();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      CommOptions o;
      o.rank = r;
      o.size = world;
      o.store = store;
      o.timeout = timeout;
      auto comm = backend == "nccl" ? CreateNcclCommunicator(o, r)
                                    : CreateGlooCommunicator(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), backend);
      body(r, **comm);
    });
  }
  for (auto& t : threads) t.join();
}

struct Group {
  std::string backend;
  int world;
};

std::string GroupName(const ::testing::TestParamInfo<Group>& info) {
  return info.param.backend + std::to_string(info.param.world);
}

class CommTest : public ::testing::TestWithParam<Group> {
 protected:
  void SetUp() override {
    if (GetParam().backend == "nccl" && GpuCount() < GetParam().world) {
      GTEST_SKIP() << "NCCL with " << GetParam().world << " rank(s) needs "
                   << GetParam().world << " GPU(s); this machine has "
                   << GpuCount();
    }
  }
  const std::string& backend() const { return GetParam().backend; }
};

TEST_P(CommTest, AllReduceSumAndAverageOverSizes) {
  const int world = GetParam().world;
  RunRanks(backend(), world, absl::Seconds(60),
           [&](int rank, Communicator& comm) {
             for (int64_t n : {0, 1, 7, 1001, 10000000}) {
               at::Tensor t = torch::full({n}, static_cast<float>(rank + 1));
               if (n > 1) t[n - 1] = rank * 10.0f;
               ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
               const float sum = world * (world + 1) / 2.0f;
               if (n > 0) {
                 EXPECT_FLOAT_EQ(t[0].item<float>(), sum) << n;
               }
               if (n > 1) {
                 EXPECT_FLOAT_EQ(t[n - 1].item<float>(),
                                 10.0f * world * (world - 1) / 2)
                     << n;
                 EXPECT_TRUE(torch::allclose(t.narrow(0, 0, n - 1),
                                             torch::full({n - 1}, sum)));
               }
               at::Tensor a = torch::full({n}, static_cast<float>(rank));
               ASSERT_TRUE(comm.AllReduce(a, ReduceOp::kAverage).ok());
               if (n > 0) {
                 EXPECT_FLOAT_EQ(a[0].item<float>(), (world - 1) / 2.0f);
               }
             }
             EXPECT_EQ(comm.sequence(), 10);
           });
}

TEST_P(CommTest, BroadcastBarrierAllGather) {
  const int world = GetParam().world;
  RunRanks(
      backend(), world, absl::Seconds(60), [&](int rank, Communicator& comm) {
        at::Tensor t = torch::arange(5, torch::kFloat32) * (rank + 1);
        ASSERT_TRUE(comm.Broadcast(t, world - 1).ok());
        EXPECT_TRUE(torch::equal(t, torch::arange(5, torch::kFloat32) * world));
        ASSERT_TRUE(comm.Barrier().ok());
        auto all = comm.AllGather(std::string(rank, 'x'));
        ASSERT_TRUE(all.ok()) << all.status();
        ASSERT_EQ(all->size(), static_cast<size_t>(world));
        for (int r = 0; r < world; ++r)
          EXPECT_EQ((*all)[r], std::string(r, 'x'));
      });
}

TEST_P(CommTest, SixteenBitTensorsSumOnTheWire) {
  const int world = GetParam().world;
  RunRanks(backend(), world, absl::Seconds(60),
           [&](int rank, Communicator& comm) {
             for (auto dtype : {torch::kBFloat16, torch::kHalf}) {
               at::Tensor t = torch::full({33}, 0.5f * (rank + 1)).to(dtype);
               ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kAverage).ok());
               EXPECT_EQ(t.scalar_type(), dtype);
               EXPECT_NEAR(t[3].item<float>(), 0.5f * (world + 1) / 2, 1e-2);
             }
             at::Tensor ints = torch::ones({3}, torch::kInt64);
             EXPECT_EQ(comm.AllReduce(ints, ReduceOp::kSum).code(),
                       absl::StatusCode::kInvalidArgument);
           });
}

INSTANTIATE_TEST_SUITE_P(Worlds, CommTest,
                         ::testing::Values(Group{"gloo", 1}, Group{"gloo", 2},
                                           Group{"gloo", 3}, Group{"gloo", 4},
                                           Group{"nccl", 1}, Group{"nccl", 2},
                                           Group{"nccl", 3}, Group{"nccl", 4}),
                         GroupName);

class CommTimeoutTest : public CommTest {};

TEST_P(CommTimeoutTest, NamesTheRankThatDidNotArrive) {
  std::vector<absl::Status> results(3);
  RunRanks(backend(), 3, absl::Milliseconds(500),
           [&](int rank, Communicator& comm) {
             at::Tensor warmup = torch::ones({4});
             ASSERT_TRUE(comm.AllReduce(warmup, ReduceOp::kSum).ok());
             if (rank == 2) return;  // rank 2 never enters collective #2
             at::Tensor t = torch::ones({1000});
             results[rank] = comm.AllReduce(t, ReduceOp::kSum);
           });
  for (int r : {0, 1}) {
    const absl::Status& s = results[r];
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("allreduce #2"), std::string::npos) << s;
    EXPECT_NE(s.message().find("rank(s) 2 did not arrive"), std::string::npos)
        << s;
  }
  if (backend() == "nccl") {  // aborted, so later calls fail at once
    for (int r : {0, 1}) {
      EXPECT_NE(results[r].message().find("aborted"), std::string::npos)
          << results[r];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ThreeRanks, CommTimeoutTest,
                         ::testing::Values(Group{"gloo", 3}, Group{"nccl", 3}),
                         GroupName);

TEST(NcclTest, FailsClearlyWithoutAGpu) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  CommOptions o;
  o.store = std::make_shared<InMemoryStore>();
  auto comm = CreateNcclCommunicator(o, 0);
  if (GRADSYNC_WITH_NCCL) {
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(comm.status().message().find("sees no GPU"), std::string::npos)
        << comm.status();
  } else {
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnimplemented);
  }
}

TEST(GlooRendezvousTest, NamesRanksThatNeverJoined) {
  auto store = std::make_shared<InMemoryStore>();
  CommOptions o;
  o.rank = 0;
  o.size = 3;
  o.store = store;
  o.timeout = absl::Milliseconds(200);
  auto comm = CreateGlooCommunicator(o);
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(comm.status().message().find("rank(s) 1, 2 of 3 never joined"),
            std::string::npos)
      << comm.status();
}

}  // namespace
}  // namespace gradsync
