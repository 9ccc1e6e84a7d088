#include "tests/fakes/rank_threads.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "coordinator/store/memory_store.h"

namespace gradsync {

void RunRanks(Backend backend, int world, absl::Duration timeout,
              const std::function<void(int, Communicator&)>& body,
              const GlooOptions& gloo) {
  auto store = std::make_shared<MemoryStore>();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      CommOptions o;
      o.rank = r;
      o.size = world;
      o.store = store;
      o.timeout = timeout;
      o.cuda_device = r;
      auto comm = backend == Backend::kGloo ? CreateGlooCommunicator(o, gloo)
                                            : CreateCommunicator(backend, o);
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), backend);
      body(r, **comm);
    });
  }
  for (std::thread& t : threads) t.join();
}

absl::StatusOr<std::unique_ptr<Communicator>> SoloCommunicator() {
  CommOptions o;
  o.store = std::make_shared<MemoryStore>();
  return CreateCommunicator(Backend::kGloo, o);
}

}  // namespace gradsync
