// Ranks as threads: the harness the communicator, reducer and trainer tests
// share (as gloo's test/base_test.h does). Each rank gets its own
// communicator over one MemoryStore shared by the threads.
// Thread safety: call from the test's main thread; `body` runs on the rank
// threads, one call each, all at once.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/comm/communicator.h"
#include "worker/comm/gloo/gloo_communicator.h"

namespace gradsync {

// Runs body(rank, communicator) on `world` threads and joins them; rank r of
// an NCCL group uses GPU r. A communicator that cannot be made fails the
// test (gtest assertion) on its thread.
void RunRanks(Backend backend, int world, absl::Duration timeout,
              const std::function<void(int rank, Communicator&)>& body,
              const GlooOptions& gloo = {});

// A single-rank gloo communicator over a store of its own: "one process on
// the whole batch" in the equivalence tests.
absl::StatusOr<std::unique_ptr<Communicator>> SoloCommunicator();

}  // namespace gradsync
