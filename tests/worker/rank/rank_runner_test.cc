// RunRank, the one way a rank runs (the agent's tasks, gradsync-launch's
// ranks): two ranks as threads over one MemoryStore train a synthetic data
// set they count and shard themselves, with the callers' callbacks and the
// runner's lines; a rank that cannot train fails before it touches the
// store, so its peers hear nothing from it rather than a half rendezvous.
#include "worker/rank/rank_runner.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "foundation/files/scratch_directory.h"
#include "foundation/store/memory_store.h"

namespace gradsync {
namespace {

// Lines a rank logged (RankSetup::log), for the test thread to read after
// the ranks joined.
class Lines {
 public:
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& line) {
      absl::MutexLock lock(&mu_);
      lines_.push_back(line);
    };
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  bool Has(const std::string& fragment) {
    for (const std::string& line : Take()) {
      if (absl::StrContains(line, fragment)) return true;
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TrainContext TinyContext(int rank) {
  TrainContext c;
  c.spec.dataset_path = "synthetic:tiny";  // 512 train, 128 test samples
  c.spec.eval_split = "test";
  c.spec.model = "mlp";
  c.spec.batch_size = 64;
  c.spec.loader_threads = 1;
  c.rank = rank;
  c.world_size = 2;
  return c;
}

RankSetup LocalSetup(std::shared_ptr<Store> store, int rank) {
  RankSetup setup;
  setup.store = std::move(store);
  setup.timeout = absl::Seconds(60);
  setup.local_sharding = RankSetup::LocalSharding{};
  setup.log_prefix = "[rank " + std::to_string(rank) + "]";
  setup.log_every = 2;
  return setup;
}

TEST(RankRunnerTest, TwoRanksCountShardTrainAndLog) {
  absl::StatusOr<ScratchDirectory> checkpoints =
      ScratchDirectory::Create("rank-runner-test");
  ASSERT_TRUE(checkpoints.ok()) << checkpoints.status();
  auto store = std::make_shared<MemoryStore>();
  Lines lines[2];
  absl::StatusOr<TrainResult> results[2];
  int steps_seen[2] = {0, 0};
  int evals_seen = 0;
  Communicator* connected[2] = {nullptr, nullptr};
  std::unique_ptr<Communicator> comms[2];
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      RankSetup setup = LocalSetup(store, rank);
      setup.log = lines[rank].Sink();
      setup.on_connected = [&, rank](Communicator* c) { connected[rank] = c; };
      TrainContext c = TinyContext(rank);
      c.spec.checkpoint_directory = checkpoints->path();  // rank 0 writes
      // The caller's callbacks still run, before the runner's lines.
      c.on_step = [&, rank](const StepReport&) { ++steps_seen[rank]; };
      c.on_eval = [&](const EvalReport& e) {
        ++evals_seen;
        EXPECT_EQ(e.samples, 128);  // every test sample once
      };
      results[rank] = RunRank(setup, std::move(c), &comms[rank]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(results[rank].ok()) << results[rank].status();
    // 512 samples over 2 ranks in batches of 64.
    EXPECT_EQ(results[rank]->steps, 4) << rank;
    EXPECT_EQ(steps_seen[rank], 4) << rank;
    ASSERT_NE(comms[rank], nullptr);
    EXPECT_EQ(connected[rank], comms[rank].get());  // the caller keeps it
    const std::string me = "[rank " + std::to_string(rank) + "] ";
    for (const std::string& line : lines[rank].Take()) {
      EXPECT_TRUE(absl::StartsWith(line, me)) << line;
    }
    EXPECT_TRUE(lines[rank].Has(me + "is one of 2 ranks: gloo")) << rank;
    EXPECT_TRUE(lines[rank].Has(me + "epoch 1 step 2/4 loss ")) << rank;
    EXPECT_TRUE(lines[rank].Has(me + "epoch 1 step 4/4 loss ")) << rank;
  }
  EXPECT_EQ(evals_seen, 1);  // rank 0 reports
  EXPECT_TRUE(lines[0].Has("[rank 0] epoch 1: test accuracy "));
  // Epochs counted from 1: the final checkpoint of a 1-epoch run commits
  // epoch 1, not "through epoch 2 batch 0".
  EXPECT_TRUE(lines[0].Has("[rank 0] checkpoint " + checkpoints->path() +
                           "/model-step-4.pt (step 4) commits epoch 1 to "
                           "its end"));
  EXPECT_FALSE(lines[1].Has("test accuracy"));
}

// Finding (the two launchers): one checked the device before connecting,
// the other after counting; both must stop before a peer waits on them.
TEST(RankRunnerTest, ARankThatCannotTrainStopsBeforeTheRendezvous) {
  auto store = std::make_shared<MemoryStore>();
  std::unique_ptr<Communicator> comm;

  RankSetup missing = LocalSetup(store, 0);
  TrainContext c = TinyContext(0);
  c.spec.dataset_path = "/nonexistent/gradsync-data";
  absl::StatusOr<TrainResult> r = RunRank(missing, std::move(c), &comm);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();

  if (!torch::cuda::is_available()) {
    RankSetup nccl = LocalSetup(store, 0);
    nccl.backend = Backend::kNccl;
    r = RunRank(nccl, TinyContext(0), &comm);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition)
        << r.status();
    EXPECT_NE(r.status().message().find("no CUDA"), std::string::npos)
        << r.status();
  }
  EXPECT_EQ(comm, nullptr);
  // Nothing reached the store: no hello, no NCCL id.
  EXPECT_FALSE(store->Get("gloo/hello/0", absl::ZeroDuration()).ok());
  EXPECT_FALSE(store->Get("nccl/unique_id", absl::ZeroDuration()).ok());
}

}  // namespace
}  // namespace gradsync
