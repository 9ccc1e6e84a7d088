// The gloo communicator with W ranks as threads over an in-memory store.
#include "worker/comm/communicator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

namespace gradsync {
namespace {

// Runs body(rank, communicator) on `world` threads sharing one store.
void RunRanks(int world, absl::Duration timeout,
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
      auto comm = CreateGlooCommunicator(o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      body(r, **comm);
    });
  }
  for (auto& t : threads) t.join();
}

class GlooTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooTest, AllReduceSumAndAverageOverSizes) {
  const int world = GetParam();
  RunRanks(world, absl::Seconds(60), [&](int rank, Communicator& comm) {
    for (int64_t n : {0, 1, 7, 1001, 10000000}) {
      at::Tensor t = torch::full({n}, static_cast<float>(rank + 1));
      if (n > 1) t[n - 1] = rank * 10.0f;
      ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
      const float sum = world * (world + 1) / 2.0f;
      if (n > 0) {
        EXPECT_FLOAT_EQ(t[0].item<float>(), sum) << n;
      }
      if (n > 1) {
        EXPECT_FLOAT_EQ(t[n - 1].item<float>(), 10.0f * world * (world - 1) / 2)
            << n;
        EXPECT_TRUE(
            torch::allclose(t.narrow(0, 0, n - 1), torch::full({n - 1}, sum)));
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

TEST_P(GlooTest, BroadcastBarrierAllGather) {
  const int world = GetParam();
  RunRanks(world, absl::Seconds(60), [&](int rank, Communicator& comm) {
    at::Tensor t = torch::arange(5, torch::kFloat32) * (rank + 1);
    ASSERT_TRUE(comm.Broadcast(t, world - 1).ok());
    EXPECT_TRUE(torch::equal(t, torch::arange(5, torch::kFloat32) * world));
    ASSERT_TRUE(comm.Barrier().ok());
    auto all = comm.AllGather(std::string(rank, 'x'));
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) EXPECT_EQ((*all)[r], std::string(r, 'x'));
  });
}

TEST_P(GlooTest, SixteenBitTensorsSumOnTheWire) {
  const int world = GetParam();
  RunRanks(world, absl::Seconds(60), [&](int rank, Communicator& comm) {
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

INSTANTIATE_TEST_SUITE_P(Worlds, GlooTest, ::testing::Values(1, 2, 3, 4));

TEST(GlooTimeoutTest, NamesTheRankThatDidNotArrive) {
  std::vector<absl::Status> results(3);
  RunRanks(3, absl::Milliseconds(500), [&](int rank, Communicator& comm) {
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
