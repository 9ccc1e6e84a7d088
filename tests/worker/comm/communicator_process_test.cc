// The gloo communicator with its ranks as processes (tests/fakes/
// rank_processes.h), over each transport: all-reduces through shared memory
// (the default for ranks on one host; the ranks check they got it) and over
// TCP (GRADSYNC_GLOO_SHM=0). Every collective over sizes up to 10^7 floats,
// and a peer killed mid-run (DeadPeerTest in communicator_test also stops
// one and times the others, over the default transport only).
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/torch.h>

#include <string>
#include <tuple>

#include "tests/fakes/absent_ranks.h"
#include "tests/fakes/rank_processes.h"
#include "tests/fakes/shm_probe.h"
#include "worker/comm/communicator.h"
#include "worker/comm/gloo/gloo_communicator.h"

namespace gradsync {
namespace {

// All-reduces go through shared memory exactly when asked for and there is
// a peer to share it with.
void ExpectTransport(Communicator& comm, bool shm) {
  EXPECT_EQ(AllReducesThroughSharedMemory(comm), shm && comm.size() > 1)
      << comm.transport();
}

void CheckEveryCollective(int rank, Communicator& comm) {
  const int w = comm.size();
  for (int64_t n : {0, 1, 7, 1001, 10000000}) {
    at::Tensor t = torch::full({n}, static_cast<float>(rank + 1));
    ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok()) << n;
    if (n > 0) {
      EXPECT_TRUE(torch::allclose(t, torch::full({n}, w * (w + 1) / 2.0f)))
          << "sum of " << n;
    }
    at::Tensor a = torch::full({n}, static_cast<float>(rank));
    ASSERT_TRUE(comm.AllReduce(a, ReduceOp::kAverage).ok()) << n;
    if (n > 0) {
      EXPECT_TRUE(torch::allclose(a, torch::full({n}, (w - 1) / 2.0f)))
          << "average of " << n;
    }
  }
  at::Tensor b = torch::full({5}, static_cast<float>(rank));
  ASSERT_TRUE(comm.Broadcast(b, 0).ok());
  EXPECT_EQ(b[4].item<float>(), 0);
  ASSERT_TRUE(comm.Barrier().ok());
  auto all = comm.AllGather(std::to_string(rank * 11));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(static_cast<int>(all->size()), w);
  for (int r = 0; r < w; ++r) EXPECT_EQ((*all)[r], std::to_string(r * 11));
}

class ProcessTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (std::get<1>(GetParam()) && !CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }
};

TEST_P(ProcessTest, AllCollectivesAcrossProcesses) {
  const auto [world, shm] = GetParam();
  GlooTransportScope transport(shm);
  RunRankProcesses(Backend::kGloo, world, absl::Seconds(60),
                   [shm = shm](int rank, Communicator& comm) {
                     ExpectTransport(comm, shm);
                     CheckEveryCollective(rank, comm);
                   });
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ProcessTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
      return std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "SharedMemory" : "Tcp");
    });

class ProcessKillTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }
};

TEST_P(ProcessKillTest, SurvivorsNameTheKilledRank) {
  const bool shm = GetParam();
  GlooTransportScope transport(shm);
  RunRankProcesses(Backend::kGloo, 3, absl::Seconds(2),
                   [shm](int rank, Communicator& comm) {
                     ExpectTransport(comm, shm);
                     at::Tensor warm = torch::ones({16});
                     ASSERT_TRUE(comm.AllReduce(warm, ReduceOp::kSum).ok());
                     EXPECT_EQ(warm[0].item<float>(), 3);
                     if (rank == 2) raise(SIGKILL);
                     at::Tensor t = torch::ones({1000});
                     const absl::Status s = comm.AllReduce(t, ReduceOp::kSum);
                     EXPECT_TRUE(NamesAbsentRank(s, 2)) << s;
                   },
                   {{2, SIGKILL}});
}

INSTANTIATE_TEST_SUITE_P(Transports, ProcessKillTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "SharedMemory"
                                                         : "Tcp");
                         });

}  // namespace
}  // namespace gradsync
