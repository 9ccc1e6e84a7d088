// comm_rank STORE_DIR RANK SIZE MODE: one rank of a gloo communicator as its
// own process, bootstrapped through a FileStore. MODE "ok" runs every
// collective over sizes 0, 1, 7, 1001 and 10^7 floats and checks the
// results; MODE "die" makes the last rank kill itself (SIGKILL) after the
// first all-reduce, and the others check that their next all-reduce fails
// naming it. Exit 0 when every check passed.
#include <torch/torch.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "coordinator/store/file_store.h"
#include "tests/fakes/absent_ranks.h"
#include "worker/comm/communicator.h"
#include "worker/comm/gloo/gloo_communicator.h"

namespace {
int Fail(const std::string& what) {
  std::fprintf(stderr, "comm_rank: %s\n", what.c_str());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return Fail("usage: comm_rank STORE_DIR RANK SIZE MODE");
  gradsync::CommOptions o;
  o.rank = std::stoi(argv[2]);
  o.size = std::stoi(argv[3]);
  o.store = std::make_shared<gradsync::FileStore>(argv[1]);
  const std::string mode = argv[4];
  o.timeout = mode == "die" ? absl::Seconds(2) : absl::Seconds(60);
  auto comm = gradsync::CreateCommunicator(gradsync::Backend::kGloo, o);
  if (!comm.ok()) return Fail(comm.status().ToString());
  // GRADSYNC_EXPECT_SHM=1 (0): the all-reduces must (must not) go through
  // shared memory.
  if (const char* expect = std::getenv("GRADSYNC_EXPECT_SHM")) {
    const bool shares = gradsync::AllReducesThroughSharedMemory(**comm);
    if (shares != (std::string(expect) == "1")) {
      return Fail(shares ? "all-reduces through shared memory, expected TCP"
                         : "all-reduces over TCP, expected shared memory");
    }
  }
  const int w = o.size, r = o.rank;
  at::Tensor warm = torch::ones({16});
  if (!(*comm)->AllReduce(warm, gradsync::ReduceOp::kSum).ok() ||
      warm[0].item<float>() != w) {
    return Fail("warm-up all-reduce");
  }
  if (mode == "die") {
    if (r == w - 1) raise(SIGKILL);
    at::Tensor t = torch::ones({1000});
    absl::Status s = (*comm)->AllReduce(t, gradsync::ReduceOp::kSum);
    // The list must hold the dead rank.
    const bool named = gradsync::NamesAbsentRank(s, w - 1);
    if (s.ok() || !named) {
      return Fail("expected an error naming rank " + std::to_string(w - 1) +
                  ", got: " + s.ToString());
    }
    std::printf("rank %d: %s\n", r, s.ToString().c_str());
    return 0;
  }
  for (int64_t n : {0, 1, 7, 1001, 10000000}) {
    at::Tensor t = torch::full({n}, static_cast<float>(r + 1));
    if (!(*comm)->AllReduce(t, gradsync::ReduceOp::kSum).ok()) {
      return Fail("sum");
    }
    if (n > 0 && !torch::allclose(t, torch::full({n}, w * (w + 1) / 2.0f))) {
      return Fail("sum of " + std::to_string(n));
    }
    at::Tensor a = torch::full({n}, static_cast<float>(r));
    if (!(*comm)->AllReduce(a, gradsync::ReduceOp::kAverage).ok()) {
      return Fail("average");
    }
    if (n > 0 && !torch::allclose(a, torch::full({n}, (w - 1) / 2.0f))) {
      return Fail("average of " + std::to_string(n));
    }
  }
  at::Tensor b = torch::full({5}, static_cast<float>(r));
  if (!(*comm)->Broadcast(b, 0).ok() || b[4].item<float>() != 0) {
    return Fail("broadcast");
  }
  if (!(*comm)->Barrier().ok()) return Fail("barrier");
  auto all = (*comm)->AllGather(std::to_string(r * 11));
  if (!all.ok() || static_cast<int>(all->size()) != w ||
      (*all)[w - 1] != std::to_string((w - 1) * 11)) {
    return Fail("allgather");
  }
  return 0;
}
