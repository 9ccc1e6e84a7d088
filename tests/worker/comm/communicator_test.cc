// The communicators with W ranks as threads over an in-memory store (as
// processes where a case needs them: a killed peer, NCCL ranks sharing a
// GPU). Built twice: communicator_test runs gloo (and its own all-reduce
// paths); nccl_communicator_test (GRADSYNC_TEST_NCCL, label gpu) runs the
// same cases over NCCL, one GPU per rank where there are enough (processes
// sharing them where not), and skips them with a message without a GPU.
#include "worker/comm/communicator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "foundation/store/memory_store.h"
#include "gradsync/config.h"
#include "tests/fakes/absent_ranks.h"
#include "tests/fakes/rank_processes.h"
#include "tests/fakes/rank_threads.h"
#include "tests/fakes/shm_probe.h"
#include "worker/comm/create_communicator.h"
#include "worker/comm/devices.h"

namespace gradsync {
namespace {

struct Group {
  Backend backend;
  int world;
};

void PrintTo(const Group& g, std::ostream* os) {
  *os << BackendName(g.backend) << " x" << g.world;
}

std::string GroupName(const ::testing::TestParamInfo<Group>& info) {
  return BackendName(info.param.backend) + std::to_string(info.param.world);
}

class CommTest : public ::testing::TestWithParam<Group> {
 protected:
  void SetUp() override {
    if (const std::string why = CannotRunRanks(backend(), GetParam().world);
        !why.empty()) {
      GTEST_SKIP() << why;
    }
  }
  Backend backend() const { return GetParam().backend; }
};

TEST_P(CommTest, AllReduceSumAndAverageOverSizes) {
  const int world = GetParam().world;
  RunRanks(
      backend(), world, absl::Seconds(60), [&](int rank, Communicator& comm) {
        for (int64_t n : {0, 1, 7, 1001, 10000000}) {
          at::Tensor t = torch::full({n}, static_cast<float>(rank + 1));
          if (n > 1) t[n - 1] = rank * 10.0f;
          const absl::Status summed = comm.AllReduce(t, ReduceOp::kSum);
          ASSERT_TRUE(summed.ok()) << summed << " (n=" << n << ")";
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
          const absl::Status averaged = comm.AllReduce(a, ReduceOp::kAverage);
          ASSERT_TRUE(averaged.ok()) << averaged << " (n=" << n << ")";
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
               const absl::Status s = comm.AllReduce(t, ReduceOp::kAverage);
               ASSERT_TRUE(s.ok()) << s;
               EXPECT_EQ(t.scalar_type(), dtype);
               EXPECT_NEAR(t[3].item<float>(), 0.5f * (world + 1) / 2, 1e-2);
             }
             at::Tensor ints = torch::ones({3}, torch::kInt64);
             EXPECT_EQ(comm.AllReduce(ints, ReduceOp::kSum).code(),
                       absl::StatusCode::kInvalidArgument);
           });
}

INSTANTIATE_TEST_SUITE_P(Worlds, CommTest,
                         ::testing::Values(Group{kBackend, 1},
                                           Group{kBackend, 2},
                                           Group{kBackend, 3},
                                           Group{kBackend, 4}),
                         GroupName);

#ifndef GRADSYNC_TEST_NCCL

// The gloo all-reduce's paths: over TCP, one message to every peer up to
// the segment size and the segmented ring above it (4 KB segments); through
// shared memory, 4 KB chunks cut into a portion per rank. Sizes around
// them, chunks that do not divide evenly and all in one sequence (the
// credits and the alternating slot sets carry over): every rank gets the
// rank-order sum within float tolerance and exactly the same bits as every
// other rank.
class GlooAllReduceTest
    : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (shm() && !CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }
  int world() const { return std::get<0>(GetParam()); }
  bool shm() const { return std::get<1>(GetParam()); }
};

TEST_P(GlooAllReduceTest, EveryPathGivesTheSameSumOnEveryRank) {
  const int world = this->world();
  constexpr size_t kSegment = 4096;
  struct Case {
    int64_t n;
    torch::ScalarType dtype;
  };
  const std::vector<Case> cases = {
      {1, torch::kFloat32},     {100003, torch::kFloat32},
      {33, torch::kFloat32},    {1024, torch::kFloat32},
      {1025, torch::kFloat32},  {3 * 1024 + 5, torch::kFloat32},
      {4099, torch::kBFloat16}, {2048, torch::kHalf},
      {7, torch::kFloat32}};
  // Rank r's contribution to case i, the same on every rank (own generator:
  // the ranks are threads).
  auto input = [](int r, size_t i, const Case& c) {
    at::Generator gen = at::detail::createCPUGenerator(1000 * r + i);
    return torch::randn({c.n}, gen).to(c.dtype);
  };
  GlooOptions gloo;
  gloo.segment_bytes = kSegment;
  gloo.shared_memory = shm();
  gloo.shared_memory_chunk_bytes = kSegment;
  RunGlooRanks(
      world, absl::Seconds(60),
      [&](int rank, Communicator& comm) {
        EXPECT_EQ(AllReducesThroughSharedMemory(comm), shm());
        for (size_t i = 0; i < cases.size(); ++i) {
          const Case& c = cases[i];
          at::Tensor t = input(rank, i, c);
          ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok()) << c.n;
          at::Tensor want = torch::zeros({c.n});
          for (int r = 0; r < world; ++r)
            want += input(r, i, c).to(torch::kFloat32);
          const bool wide = c.dtype == torch::kFloat32;
          EXPECT_TRUE(torch::allclose(t.to(torch::kFloat32), want,
                                      wide ? 1e-5 : 2e-2, wide ? 1e-5 : 1e-1))
              << "n=" << c.n << " rank " << rank;
          auto all = comm.AllGather(
              std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
          ASSERT_TRUE(all.ok()) << all.status();
          for (int r = 0; r < world; ++r) {
            EXPECT_TRUE((*all)[r] == (*all)[0])
                << "n=" << c.n << ": rank " << r << " differs from rank 0";
          }
        }
      },
      gloo);
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, GlooAllReduceTest,
    ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
      return std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "SharedMemory" : "Tcp");
    });

// Shared memory is all or nothing: one rank that does not share it (here by
// option; on another host because it cannot open rank 0's segment) puts
// every rank's all-reduces on TCP, and they still agree.
TEST(GlooSharedMemoryTest, OneRankWithoutItPutsEveryRankOnTcp) {
  constexpr int kWorld = 3;
  for (int holdout : {0, 2}) {  // rank 0 creates the segment; 2 joins it
    RunGlooRanks(
        kWorld, absl::Seconds(60),
        [&](int rank, Communicator& comm) {
          EXPECT_FALSE(AllReducesThroughSharedMemory(comm)) << "rank " << rank;
          at::Tensor t = torch::full({1000}, static_cast<float>(rank));
          ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
          EXPECT_TRUE(torch::equal(t, torch::full({1000}, 3.0f))) << rank;
        },
        [holdout](int rank) {
          GlooOptions gloo;
          gloo.shared_memory = rank != holdout;
          return gloo;
        });
  }
}

// A large broadcast after all-reduces over TCP, on every pair (every root).
// gloo sizes a socket's send buffer (SO_SNDBUF, which also ends the
// kernel's autotuning) from the first message sent from a registered buffer;
// the all-reduce's first on a pair could be 8 bytes (a credit, a one-float
// sum), after which an 18 MB gloo broadcast on that pair took 5-10 s, past
// a 5 s deadline. Ranks as processes, as in the job where it was seen.
class GlooLargeBroadcastTest : public ::testing::TestWithParam<int> {};

// The send buffer sizes (SO_SNDBUF) of this process's connected TCP sockets.
std::vector<int> TcpSendBuffers() {
  std::vector<int> sizes;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &fd)) continue;
    struct stat st;
    int type = 0, listening = 0, bytes = 0;
    socklen_t len = sizeof(int);
    sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        listening != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        (peer.ss_family != AF_INET && peer.ss_family != AF_INET6) ||
        getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &len) != 0) {
      continue;
    }
    sizes.push_back(bytes);
  }
  return sizes;
}

TEST_P(GlooLargeBroadcastTest, FollowsSmallAndRingAllReduces) {
  const int world = GetParam();
  GlooTransportScope tcp(/*shared_memory=*/false);
  RunRankProcesses(
      Backend::kGloo, world, absl::Seconds(20),
      [&](int rank, Communicator& comm) {
        ASSERT_FALSE(AllReducesThroughSharedMemory(comm));
        at::Tensor one = torch::ones({1});
        ASSERT_TRUE(comm.AllReduce(one, ReduceOp::kSum).ok());
        at::Tensor ring = torch::ones({1 << 20});  // segments and credits
        ASSERT_TRUE(comm.AllReduce(ring, ReduceOp::kSum).ok());
        const std::vector<int> buffers = TcpSendBuffers();
        EXPECT_EQ(buffers.size(), static_cast<size_t>(world - 1));
        for (int bytes : buffers) {
          EXPECT_GE(bytes, GlooOptions().segment_bytes)
              << "a pair's send buffer is pinned small";
        }
        for (int root = 0; root < world; ++root) {
          at::Tensor big = torch::full({(18 << 20) / 4}, rank == root);
          const absl::Status s = comm.Broadcast(big, root);
          ASSERT_TRUE(s.ok()) << "root " << root << ": " << s;
          EXPECT_TRUE(torch::equal(big, torch::ones_like(big))) << root;
        }
      });
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooLargeBroadcastTest,
                         ::testing::Values(2, 3, 4));

// Sizes the all-reduces cannot cut buffers by are refused up front.
TEST(GlooOptionsTest, RejectsSizesThatAreNotWholeMultiples) {
  GlooOptions segment, chunk;
  segment.segment_bytes = 4097;
  chunk.shared_memory_chunk_bytes = 1000;
  for (const auto& [gloo, named] :
       {std::pair{segment, "segment size 4097 is not a positive multiple of 4"},
        std::pair{chunk, "chunk size 1000 is not a positive multiple of 64"}}) {
    CommOptions o;
    o.store = std::make_shared<MemoryStore>();
    const absl::Status s = CreateGlooCommunicator(o, gloo).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(named), std::string::npos) << s;
  }
}

#endif  // GRADSYNC_TEST_NCCL

// Issue 39, finding 15: when the coordinator ends an attempt (a peer hangs),
// Abort() from another thread ends the collective the rank waits in at
// once, with ABORTED, and every later one; without it the rank sat out the
// collective's deadline. Each operation, the all-reduce over TCP (direct and
// ring) and through shared memory; the deadline is long, so a wait that
// Abort did not end would fail with DEADLINE_EXCEEDED instead.
class CommAbortTest : public CommTest {};

TEST_P(CommAbortTest, AbortEndsTheCollectiveInFlightAndLaterOnes) {
  const int world = GetParam().world;
  const absl::Duration timeout = absl::Seconds(120);
  for (const std::string op : {"allreduce", "ring", "broadcast", "barrier"}) {
    absl::Notification done;
    RunRanks(backend(), world, timeout, [&](int rank, Communicator& comm) {
      at::Tensor warmup = torch::ones({4}, RankDevice(backend(), rank));
      ASSERT_TRUE(comm.AllReduce(warmup, ReduceOp::kSum).ok());
      if (rank != 0) {  // never enters the next collective: it "hangs"
        done.WaitForNotification();
        comm.Abort();  // the attempt is over for it too
        return;
      }
      std::thread aborter([&comm] {
        absl::SleepFor(absl::Milliseconds(300));
        comm.Abort();
      });
      at::Tensor t = torch::ones({op == "ring" ? 1000000 : 1000},
                                 RankDevice(backend(), rank));
      const absl::Status s = op == "broadcast" ? comm.Broadcast(t, 1)
                             : op == "barrier"
                                 ? comm.Barrier()
                                 : comm.AllReduce(t, ReduceOp::kSum);
      aborter.join();
      EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << op << ": " << s;
      EXPECT_TRUE(comm.aborted());
      // Later collectives fail at once, also ABORTED.
      at::Tensor again = torch::ones({4}, RankDevice(backend(), rank));
      EXPECT_EQ(comm.AllReduce(again, ReduceOp::kSum).code(),
                absl::StatusCode::kAborted)
          << op;
      done.Notify();
    });
  }
}

INSTANTIATE_TEST_SUITE_P(TwoRanks, CommAbortTest,
                         ::testing::Values(Group{kBackend, 2}), GroupName);

#ifndef GRADSYNC_TEST_NCCL
// The gloo all-reduce both ways: through shared memory (ranks on one host)
// and over TCP (direct and ring).
TEST(GlooAbortTest, AbortEndsAnAllReduceOverEitherTransport) {
  for (const bool shared : {true, false}) {
    for (const int64_t n : {1000, 1000000}) {
      GlooOptions gloo;
      gloo.shared_memory = shared;
      absl::Notification done;
      RunGlooRanks(
          2, absl::Seconds(120),
          [&](int rank, Communicator& comm) {
            EXPECT_EQ(
                comm.transport().find("shared memory") != std::string::npos,
                shared)
                << comm.transport();
            at::Tensor warmup = torch::ones({4});
            ASSERT_TRUE(comm.AllReduce(warmup, ReduceOp::kSum).ok());
            if (rank != 0) {
              done.WaitForNotification();
              comm.Abort();
              return;
            }
            std::thread aborter([&comm] {
              absl::SleepFor(absl::Milliseconds(300));
              comm.Abort();
            });
            at::Tensor t = torch::ones({n});
            const absl::Status s = comm.AllReduce(t, ReduceOp::kSum);
            aborter.join();
            EXPECT_EQ(s.code(), absl::StatusCode::kAborted)
                << (shared ? "shared memory " : "tcp ") << n << ": " << s;
            done.Notify();
          },
          gloo);
    }
  }
}
#endif  // GRADSYNC_TEST_NCCL

class CommTimeoutTest : public CommTest {};

TEST_P(CommTimeoutTest, NamesTheRankThatDidNotArrive) {
  // Ranks as processes start (and NCCL connects) in seconds, not ms.
  const absl::Duration timeout = RanksRunAsProcesses(backend(), 3)
                                     ? absl::Seconds(5)
                                     : absl::Milliseconds(500);
  // gloo: 1000 floats go to every peer in one message, 10^6 run the ring.
  for (int64_t n : {1000, 1000000}) {
    RunRanks(backend(), 3, timeout, [&](int rank, Communicator& comm) {
      at::Tensor warmup = torch::ones({4});
      ASSERT_TRUE(comm.AllReduce(warmup, ReduceOp::kSum).ok());
      if (rank == 2) return;  // rank 2 never enters collective #2
      at::Tensor t = torch::ones({n});
      const absl::Status s = comm.AllReduce(t, ReduceOp::kSum);
      EXPECT_FALSE(s.ok()) << n;
      EXPECT_NE(s.message().find("allreduce #2"), std::string::npos) << s;
      EXPECT_NE(s.message().find("rank(s) 2 did not arrive"), std::string::npos)
          << s;
      if (backend() == Backend::kNccl) {  // aborted, so later calls fail
        EXPECT_NE(s.message().find("aborted"), std::string::npos) << s;
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(ThreeRanks, CommTimeoutTest,
                         ::testing::Values(Group{kBackend, 3}), GroupName);

// A peer killed (SIGKILL) or hung (SIGSTOP) before a collective: the
// others' call returns within its deadline + 5 s, naming it. Ranks as
// processes, each all-reducing a tensor where it computes (NCCL: its GPU).
class DeadPeerTest : public ::testing::TestWithParam<int> {};

TEST_P(DeadPeerTest, TheOthersReturnWithinTheDeadlineNamingIt) {
  if (const std::string why = CannotRunRanks(kBackend, 3); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const int sig = GetParam();
  const absl::Duration timeout = absl::Seconds(5);
  RunRankProcesses(
      kBackend, 3, timeout,
      [&](int rank, Communicator& comm) {
        const c10::Device device = RankDevice(kBackend, rank);
        at::Tensor warmup = torch::ones({4}, device);
        ASSERT_TRUE(comm.AllReduce(warmup, ReduceOp::kSum).ok());
        if (rank == 2) raise(sig);
        at::Tensor t = torch::ones({1 << 20}, device);
        const absl::Time start = absl::Now();
        const absl::Status s = comm.AllReduce(t, ReduceOp::kSum);
        const absl::Duration took = absl::Now() - start;
        EXPECT_FALSE(s.ok());
        EXPECT_NE(s.message().find("allreduce #2"), std::string::npos) << s;
        EXPECT_TRUE(NamesAbsentRank(s, 2)) << s;
        EXPECT_LT(took, timeout + absl::Seconds(5)) << s;
      },
      {{2, sig}});
}

INSTANTIATE_TEST_SUITE_P(Signals, DeadPeerTest,
                         ::testing::Values(SIGKILL, SIGSTOP),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(
                               info.param == SIGKILL ? "Killed" : "Stopped");
                         });

#ifdef GRADSYNC_TEST_NCCL
int GpuCount() {
  static const int count = static_cast<int>(DiscoverDevices().cuda.size());
  return count;
}

TEST(NcclTest, FailsClearlyWithoutAGpu) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  CommOptions o;
  o.store = std::make_shared<MemoryStore>();
  auto comm = CreateCommunicator(Backend::kNccl, o);
  if (GRADSYNC_WITH_NCCL) {
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(comm.status().message().find("sees no GPU"), std::string::npos)
        << comm.status();
  } else {
    EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnimplemented);
  }
}

#endif  // GRADSYNC_TEST_NCCL

#ifndef GRADSYNC_TEST_NCCL
// Rank 0 of `size` over `store`, alone: the tests play the others through
// the store, or not at all.
CommOptions RankZeroOf(int size, std::shared_ptr<Store> store,
                       absl::Duration timeout) {
  CommOptions o;
  o.size = size;
  o.store = std::move(store);
  o.timeout = timeout;
  return o;
}

TEST(GlooRendezvousTest, NamesRanksThatNeverJoined) {
  auto store = std::make_shared<MemoryStore>();
  auto comm =
      CreateGlooCommunicator(RankZeroOf(3, store, absl::Milliseconds(200)));
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(comm.status().message().find("rank(s) 1, 2 of 3 never joined"),
            std::string::npos)
      << comm.status();
}

// A store that counts the reads the gloo bootstrap makes of the base store.
class CountingStore : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> base)
      : base_(std::move(base)) {}
  absl::Status Set(const std::string& key, const std::string& value) override {
    return base_->Set(key, value);
  }
  absl::StatusOr<std::string> Get(const std::string& key,
                                  absl::Duration timeout) override {
    ++gets;
    return base_->Get(key, timeout);
  }
  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    return base_->Add(key, delta);
  }
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override {
    return base_->Wait(keys, timeout);
  }
  absl::StatusOr<std::vector<std::string>> MultiGet(
      const std::vector<std::string>& keys, absl::Duration timeout) override {
    ++multi_gets;
    int most = largest_multi_get;
    while (static_cast<int>(keys.size()) > most &&
           !largest_multi_get.compare_exchange_weak(most, keys.size())) {
    }
    return base_->MultiGet(keys, timeout);
  }

  std::atomic<int> gets{0};
  std::atomic<int> multi_gets{0};
  std::atomic<int> largest_multi_get{0};

 private:
  const std::shared_ptr<Store> base_;
};

// gloo's own connectFullMesh makes a wait and a get per peer (2n(n-1) calls
// through the coordinator); gradsync's mesh reads the peers' keys with
// ceil((n-1) / batch) MultiGets per rank and no single gets, and the mesh
// it connects carries a sum. (Shared memory is off: its agreement reads are
// not the mesh's.)
TEST(GlooBootstrapTest, ReadsPeersInBatchedMultiGets) {
  constexpr int kWorld = 5;
  auto store = std::make_shared<CountingStore>(std::make_shared<MemoryStore>());
  GlooOptions gloo;
  gloo.bootstrap_batch_keys = 2;
  gloo.shared_memory_max_ranks = 0;
  RunGlooRanks(
      kWorld, absl::Seconds(60),
      [&](int rank, Communicator& comm) {
        at::Tensor t = torch::full({3}, static_cast<float>(rank));
        ASSERT_TRUE(comm.AllReduce(t, ReduceOp::kSum).ok());
        EXPECT_TRUE(torch::equal(t, torch::full({3}, 10.0f))) << t;
      },
      gloo, store);
  EXPECT_EQ(store->gets, 0);
  EXPECT_EQ(store->multi_gets, kWorld * 2);  // 4 peers, 2 per batch
  EXPECT_EQ(store->largest_multi_get, 2);
}

// A peer's mesh key that is not one of this group's (another build, another
// world size) is reported with the rank that wrote it, not read out of
// bounds.
TEST(GlooBootstrapTest, RejectsAMalformedPeerKey) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store->Set("gloo/hello/1", "127.0.0.1").ok());
  ASSERT_TRUE(store->Set("gloo/mesh/1", "junk").ok());
  auto comm = CreateGlooCommunicator(RankZeroOf(2, store, absl::Seconds(10)));
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(comm.status().message().find("rank 1's mesh key has 4 bytes"),
            std::string::npos)
      << comm.status();
}
#endif  // GRADSYNC_TEST_NCCL

}  // namespace
}  // namespace gradsync
