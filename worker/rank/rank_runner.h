// RunRank: one rank of a job, from its device to its result, the same for
// the worker agent's task (worker/agent/task.h: the coordinator assigned
// the rank) and gradsync-launch (worker/launch/standalone_rank.h: the
// launcher did). In order: it checks the device before any connection (a
// rank that cannot train says why at once, not as its peers' timeout),
// counts and shards the samples where no coordinator did (opening each
// split once; the trainer trains on what was opened), connects the communicator
// over the caller's store, and trains, writing the progress, evaluation
// and checkpoint lines. The callers say only what differs: where the spec
// and the store come from, where shards come from, where metrics and log
// lines go.
//
// Thread safety: RunRank runs on the calling thread, and so do the
// callbacks; `on_connected` hands the communicator to other threads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "foundation/store/store.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_context.h"

namespace gradsync {

struct RankSetup {
  Backend backend = Backend::kGloo;
  int local_rank = 0;  // LOCAL_RANK in the checkpoints' metadata
  // The store the ranks bootstrap through, and the deadline of the
  // rendezvous and of every collective.
  std::shared_ptr<Store> store;
  absl::Duration timeout = absl::Seconds(60);
  // The address peers reach this rank at (gloo); "": CommOptions' default
  // (loopback, for ranks on one host).
  std::string hostname;
  // Without a coordinator (gradsync-launch) this rank counts the samples
  // itself and takes its shards by DistributedSampler's rule
  // (foundation/data_index/sampler.h; evaluation: every sample once); the
  // context's counts and shard are then replaced. Unset: they are the
  // coordinator's, and the data set here must hold as many samples.
  struct LocalSharding {
    bool shuffle = true;     // per-epoch permutation seeded spec.seed + epoch
    bool drop_last = false;  // drop the uneven tail
  };
  std::optional<LocalSharding> local_sharding;
  // Every line starts with this ("job-000001 rank 1", "[rank 0]").
  std::string log_prefix;
  // Where the lines go; null: nowhere (gradsync-launch's ranks but 0).
  std::function<void(const std::string& line)> log;
  int log_every = 20;  // steps between progress lines; 0: none
  // Called once the communicator is connected, before training.
  std::function<void(Communicator*)> on_connected;
};

// Trains one rank. `context` holds what the caller knows: the spec, rank,
// world size, GPU, shards, metric callbacks, resume source, metadata.
// RunRank sets the communicator (kept in `*communicator`, which the caller
// owns and may outlive the run), the counts and shards (with
// local_sharding), the
// torchrun names RANK, WORLD_SIZE and LOCAL_RANK in the metadata, and logs
// around on_step, on_eval and on_checkpoint (each called first).
// Errors: the device's, the data set's, the communicator's (naming the
// ranks that did not arrive), the trainer's.
absl::StatusOr<TrainResult> RunRank(
    const RankSetup& setup, TrainContext context,
    std::unique_ptr<Communicator>* communicator);

}  // namespace gradsync
