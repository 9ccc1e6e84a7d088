// Ranks as processes, for what threads of one process cannot do: NCCL ranks
// that share a GPU (a machine with fewer GPUs than ranks), and peers that are
// SIGKILLed or SIGSTOPped mid-run.
//
// How (as PyTorch's MultiProcessTestCase): the test binary runs the current
// test again in `world` child processes (--gtest_filter naming it, the rank
// in GRADSYNC_RANK_PROCESS). In a child the test runs as usual up to the same
// call, which runs body for that child's rank only, with a communicator
// bootstrapped through a FileStore, and then ends the process (status 1 when
// an assertion failed; the parent prints that rank's output). Earlier calls
// of this kind return at once in a child.
//
// Hence the contract for a test whose ranks may run as processes: body checks
// everything itself, and code after the call reads nothing body wrote (it
// runs in the parent, where no body ran).
//
// NCCL refuses two ranks of one host on one GPU, so where ranks outnumber
// GPUs each child gets its own NCCL_HOSTID: NCCL then sees one GPU per
// "host" and joins them over its socket transport on loopback.
//
// Thread safety: call from the test's main thread.
#pragma once

#include <functional>
#include <map>

#include "absl/time/time.h"
#include "worker/comm/communicator.h"

namespace gradsync {

// Runs body(rank, communicator) in `world` processes and waits for them.
// `signalled` names ranks that end themselves with a signal (rank ->
// SIGKILL or SIGSTOP, raised by body): a SIGKILLed rank must die by it; a
// SIGSTOPped one must stop, and is killed once the others have ended.
// Fails the test (gtest) when a rank fails or outlives 100 s.
void RunRankProcesses(Backend backend, int world, absl::Duration timeout,
                      const std::function<void(int rank, Communicator&)>& body,
                      const std::map<int, int>& signalled = {});

// Whether RunRanks (rank_threads.h) runs `world` ranks of `backend` as
// processes: NCCL with fewer GPUs than ranks (and at least one), or any
// backend when GRADSYNC_TEST_RANK_PROCESSES=1 (how the CPU suite checks this
// harness).
bool RanksRunAsProcesses(Backend backend, int world);

// The GPU rank `rank` uses: rank modulo this machine's GPU count.
int RankGpu(int rank);

}  // namespace gradsync
