// The exactly-once ledger on its own (coordinator/control/sample_ledger.h):
// an attempt trains part of an epoch, commits a checkpoint, fails; the next
// attempt on another world size gets exactly the rest. The restart test
// (restart_test.cc) checks the same through a running coordinator.
#include "coordinator/control/sample_ledger.h"

#include <gtest/gtest.h>

#include <map>

#include "foundation/data_index/sampler.h"

namespace gradsync {
namespace {

v1::Job MakeJob(int64_t samples, int world, int batch) {
  v1::Job job;
  job.set_train_samples(samples);
  job.set_attempt(1);
  job.set_world_size(world);
  job.mutable_spec()->set_batch_size(batch);
  job.mutable_spec()->set_seed(3);
  job.mutable_spec()->set_shuffle(true);
  job.add_attempts()->set_attempt(1);
  return job;
}

v1::CheckpointCommit Commit(int epoch, int64_t epoch_batch, int64_t step) {
  v1::CheckpointCommit c;
  c.set_path("/ckpt/model-step-" + std::to_string(step) + ".pt");
  c.set_epoch(epoch);
  c.set_epoch_batch(epoch_batch);
  c.set_step(step);
  return c;
}

TEST(SampleLedgerTest, AFreshAttemptGetsDistributedSamplerShards) {
  v1::Job job = MakeJob(10, 3, 2);
  bool created = false;
  const v1::LedgerSegment& s = CurrentSegment(job, 0, &created);
  EXPECT_TRUE(created);
  EXPECT_EQ(s.offset(), 0);
  EXPECT_EQ(s.length(), 10);
  EXPECT_EQ(s.padding(), 2);  // ceil(10 / 3) * 3 = 12
  for (int rank = 0; rank < 3; ++rank) {
    SamplerOptions o;
    o.dataset_size = 10;
    o.world_size = 3;
    o.rank = rank;
    o.seed = 3;
    o.epoch = 0;
    EXPECT_EQ(SegmentShard(s, job.spec(), 10, 0, rank),
              *DistributedSamplerIndices(o))
        << rank;
  }
  CurrentSegment(job, 0, &created);
  EXPECT_FALSE(created);  // one segment per attempt and epoch
}

// Finding: epoch_batch * batch_size overflowed for a huge epoch_batch from
// a worker, committing a negative count. It is capped at the epoch.
TEST(SampleLedgerTest, AHugeEpochBatchCommitsTheWholeEpochAtMost) {
  v1::Job job = MakeJob(24, 2, 3);
  bool created = false;
  CurrentSegment(job, 0, &created);
  CommitCheckpoint(job, Commit(0, INT64_MAX / 2, 1));
  EXPECT_EQ(job.ledger(0).committed(), 24);
  EXPECT_EQ(job.ledger(0).duplicates(), 0);
}

TEST(SampleLedgerTest, ARestartTrainsExactlyWhatWasNotCommitted) {
  // 24 samples, 2 ranks of batch 3: each step trains 6 samples.
  v1::Job job = MakeJob(24, 2, 3);
  bool created = false;
  const v1::LedgerSegment first = CurrentSegment(job, 0, &created);
  std::map<int64_t, int> trained;
  for (int rank = 0; rank < 2; ++rank) {
    const auto shard = SegmentShard(first, job.spec(), 24, 0, rank);
    for (int i = 0; i < 3; ++i) ++trained[shard[i]];  // batch 0 of each rank
  }
  CommitCheckpoint(job, Commit(0, 1, 1));
  EXPECT_EQ(job.ledger(0).committed(), 6);
  EXPECT_EQ(job.resume_step(), 1);
  EXPECT_EQ(job.resume_checkpoint(), "/ckpt/model-step-1.pt");
  EXPECT_EQ(job.attempts(0).committed_step(), 1);

  // Attempt 2 on 3 ranks: the remaining 18 samples, none padded.
  job.set_attempt(2);
  job.set_world_size(3);
  job.add_attempts()->set_attempt(2);
  const v1::LedgerSegment second = CurrentSegment(job, 0, &created);
  EXPECT_TRUE(created);
  EXPECT_EQ(second.offset(), 6);
  EXPECT_EQ(second.length(), 18);
  EXPECT_EQ(second.padding(), 0);
  for (int rank = 0; rank < 3; ++rank) {
    for (int64_t i : SegmentShard(second, job.spec(), 24, 0, rank)) {
      ++trained[i];
    }
  }
  ASSERT_EQ(trained.size(), 24u);
  for (const auto& [sample, count] : trained) {
    EXPECT_EQ(count, 1) << "sample " << sample;
  }
  // Its end-of-epoch checkpoint commits the rest.
  CommitCheckpoint(job, Commit(1, 0, 4));
  EXPECT_EQ(job.ledger(0).committed(), 24);
  EXPECT_EQ(job.ledger(0).duplicates(), 0);
}

TEST(SampleLedgerTest, PaddingDuplicatesAreCountedApart) {
  v1::Job job = MakeJob(5, 2, 3);  // 2 ranks x 3 = 6: one duplicate
  bool created = false;
  CurrentSegment(job, 0, &created);
  CommitCheckpoint(job, Commit(1, 0, 1));  // the whole epoch
  EXPECT_EQ(job.ledger(0).committed(), 5);
  EXPECT_EQ(job.ledger(0).duplicates(), 1);
}

TEST(SampleLedgerTest, DropLastRecordsTheDroppedTail) {
  v1::Job job = MakeJob(5, 2, 2);
  job.mutable_spec()->set_drop_last(true);
  bool created = false;
  const v1::LedgerSegment& s = CurrentSegment(job, 0, &created);
  EXPECT_EQ(s.dropped(), 1);
  EXPECT_EQ(s.padding(), 0);
  CommitCheckpoint(job, Commit(1, 0, 1));
  EXPECT_EQ(job.ledger(0).committed(), 4);
  EXPECT_EQ(job.ledger(0).dropped(), 1);
}

// Finding (issue 39, 11): the ledger grew with epochs (a rogue GetShard
// over 20,000 epochs grew the record by 4.4 MB). A run of complete epochs
// with the same segments is one entry, asking for a finished epoch records
// nothing, and what an ended attempt left uncommitted goes.
TEST(SampleLedgerTest, ALongRunOfCompleteEpochsIsOneEntry) {
  v1::Job job = MakeJob(100, 2, 5);
  bool created = false;
  for (int epoch = 0; epoch < 5000; ++epoch) {
    CurrentSegment(job, epoch, &created);
    CommitCheckpoint(job, Commit(epoch, 1000, epoch + 1));
  }
  ASSERT_EQ(job.ledger_size(), 1);
  EXPECT_EQ(job.ledger(0).epoch(), 0);
  EXPECT_EQ(job.ledger(0).last_epoch(), 4999);
  EXPECT_EQ(job.ledger(0).committed(), 100);
  EXPECT_LT(job.ByteSizeLong(), 1024u);
  // The same attempt asking again gets its segment of that epoch.
  EXPECT_EQ(CurrentSegment(job, 1234, &created).length(), 100);
  EXPECT_FALSE(created);
  // A later attempt asking for a finished epoch gets an empty segment, and
  // nothing is recorded.
  job.set_attempt(2);
  job.add_attempts()->set_attempt(2);
  const v1::LedgerSegment& done = CurrentSegment(job, 1234, &created);
  EXPECT_FALSE(created);
  EXPECT_EQ(done.offset(), 100);
  EXPECT_TRUE(SegmentShard(done, job.spec(), 100, 1234, 0).empty());
  EXPECT_EQ(job.ledger_size(), 1);

  // It commits half of epoch 5000: a new entry; the run stays.
  CurrentSegment(job, 5000, &created);
  CommitCheckpoint(job, Commit(5000, 5, 5001));  // 5 batches x 5 x 2 ranks
  ASSERT_EQ(job.ledger_size(), 2);
  EXPECT_EQ(job.ledger(1).committed(), 50);
}

TEST(SampleLedgerTest, WhatAnEndedAttemptLeftUncommittedGoes) {
  v1::Job job = MakeJob(100, 2, 5);
  bool created = false;
  CurrentSegment(job, 0, &created);
  CommitCheckpoint(job, Commit(0, 4, 4));  // 40 of epoch 0
  // A rogue rank asks for 20,000 epochs ahead: entries meanwhile ...
  for (int epoch = 1; epoch <= 20000; ++epoch) {
    CurrentSegment(job, epoch, &created);
  }
  EXPECT_EQ(job.ledger_size(), 20001);
  // ... gone when the attempt ends; the committed part stays, and the next
  // attempt goes on from it.
  ForgetUncommitted(job, 1);
  ASSERT_EQ(job.ledger_size(), 1);
  EXPECT_EQ(job.ledger(0).committed(), 40);
  job.set_attempt(2);
  const v1::LedgerSegment& rest = CurrentSegment(job, 0, &created);
  EXPECT_TRUE(created);
  EXPECT_EQ(rest.offset(), 40);
  const v1::LedgerSegment& fresh = CurrentSegment(job, 7, &created);
  EXPECT_EQ(fresh.offset(), 0);
  EXPECT_EQ(fresh.length(), 100);
}

}  // namespace
}  // namespace gradsync
