// One rank of a standalone run (gradsync-launch, what `torchrun --standalone
// --nproc-per-node N` gives a PyTorch user): no coordinator. The ranks of
// one host meet through a FileStore in a directory they share, shard the
// data themselves with DistributedSampler's rule (the rule the coordinator
// applies), and run as a coordinated rank does (worker/rank/rank_runner.h).
// Rank 0 logs progress and evaluations; with metrics_out it also writes
// one JSON object per step.
//
// Thread safety: RunStandaloneRank runs on one thread.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_context.h"

namespace gradsync {

struct StandaloneRankOptions {
  TrainSpec spec;
  bool shuffle = true;     // per-epoch permutation (DistributedSampler)
  bool drop_last = false;  // drop the uneven tail
  Backend backend = Backend::kGloo;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;                          // the GPU of an nccl rank
  std::string store_dir;                       // the FileStore all ranks share
  absl::Duration timeout = absl::Seconds(60);  // rendezvous, collectives
  int log_every = 20;                          // steps between log lines
  // When set, rank 0 appends one JSON object per step here.
  std::string metrics_out;
  // Steps to profile (step_profiler.h); each rank writes its files as
  // <profile_dir>/rank<R>.* (its out_prefix is set from these).
  ProfileWindow profile;
  std::string profile_dir = ".";
};

// Trains rank `rank` of the run. Errors: the data set's, the communicator's
// (naming the ranks that did not arrive), the trainer's.
absl::StatusOr<TrainResult> RunStandaloneRank(
    const StandaloneRankOptions& options, std::ostream& log);

}  // namespace gradsync
