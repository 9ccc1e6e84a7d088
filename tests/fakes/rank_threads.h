// Ranks as threads: the harness the communicator, reducer and trainer tests
// share (as gloo's test/base_test.h does). Each rank gets its own
// communicator over one MemoryStore shared by the threads. RunRanks runs
// them as processes instead where threads cannot (rank_processes.h: NCCL
// with fewer GPUs than ranks), so its bodies follow that file's contract:
// body checks everything itself; code after the call reads nothing body
// wrote.
// Thread safety: call from the test's main thread; `body` runs on the rank
// threads, one call each, all at once.
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "foundation/store/store.h"
#include "gradsync/config.h"
#include "worker/comm/communicator.h"

#if GRADSYNC_WITH_GLOO
#include "worker/comm/gloo/gloo_communicator.h"
#endif

namespace gradsync {

// The backend a multi-rank test binary runs: a test file built twice, once
// with GRADSYNC_TEST_NCCL (label gpu), runs its cases over NCCL there and
// over gloo otherwise. (constexpr at namespace scope: each translation
// unit has its own, so the two builds never meet.)
#ifdef GRADSYNC_TEST_NCCL
constexpr Backend kBackend = Backend::kNccl;
#else
constexpr Backend kBackend = Backend::kGloo;
#endif

// Runs body(rank, communicator) on `world` threads and joins them (or in
// `world` processes, above); rank r of an NCCL group uses GPU r modulo the
// GPU count. A communicator that cannot be made fails the test (gtest
// assertion) on its thread.
void RunRanks(Backend backend, int world, absl::Duration timeout,
              const std::function<void(int rank, Communicator&)>& body);
#if GRADSYNC_WITH_GLOO
// The same over gloo communicators made with `gloo`, bootstrapped through
// `store` (a new MemoryStore when null).
void RunGlooRanks(int world, absl::Duration timeout,
                  const std::function<void(int rank, Communicator&)>& body,
                  const GlooOptions& gloo,
                  std::shared_ptr<Store> store = nullptr);
// The same with each rank's options from gloo_of(rank).
void RunGlooRanks(int world, absl::Duration timeout,
                  const std::function<void(int rank, Communicator&)>& body,
                  const std::function<GlooOptions(int rank)>& gloo_of,
                  std::shared_ptr<Store> store = nullptr);
#endif

// Where rank r of a `backend` group computes: cuda:RankGpu(r) for NCCL,
// the CPU for gloo.
c10::Device RankDevice(Backend backend, int rank);
// Empty when `world` ranks of `backend` can run here (NCCL: a CUDA LibTorch
// and a GPU; ranks beyond the GPU count share them, as processes);
// otherwise why not, for GTEST_SKIP.
std::string CannotRunRanks(Backend backend, int world);

// "One process on the whole batch" in the equivalence tests: a world of one
// whose collectives leave their tensors as they are (what any backend does
// with one rank), so builds without gloo have it too. Reports kGloo: it
// stands for one CPU process.
absl::StatusOr<std::unique_ptr<Communicator>> SoloCommunicator();

}  // namespace gradsync
