// The exactly-once sample ledger of a job (job.proto: EpochLedger): which
// part of each epoch's sample order the job's attempts have committed at
// checkpoints, and the shards that follow from it.
//
// An epoch's samples have one order (EpochOrder,
// foundation/data_index/sampler.h). Since every attempt trains what is left of
// that order from where the committed part ends, and a checkpoint commits a
// prefix of what the attempt was given (the first k batches of every rank are
// the first k * b * W entries of the strided list), the uncommitted samples are
// always a suffix of the order: a segment is described by its offset alone.
//
// Storage: the ledger grows with attempts and checkpoints, not with epochs.
// A run of complete epochs with the same counts and segments is one entry
// (EpochLedger.last_epoch), and what an attempt left uncommitted is
// forgotten when it ends (ForgetUncommitted): a later attempt trains it
// from the same offset.
//
// Functions over the Job record; the caller serialises access (the
// coordinator holds its lock).
#pragma once

#include <cstdint>
#include <vector>

#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync {

// The last epoch an entry stands for (its epoch unless a run).
int LastEpoch(const v1::EpochLedger& entry);

// The current attempt's segment of `epoch`, created on first use with the
// offset the earlier attempts committed. `created` tells whether it is new.
// A complete epoch has nothing left: an empty segment, recorded nowhere.
const v1::LedgerSegment& CurrentSegment(v1::Job& job, int epoch, bool* created);

// An attempt ended: its segments that committed nothing go, and epochs left
// with no segment (they hold nothing a restart needs).
void ForgetUncommitted(v1::Job& job, int attempt);

// Records a checkpoint of the current attempt: every segment of this
// attempt for an earlier epoch is fully committed, the one of
// `commit.epoch()` up to batch `commit.epoch_batch()`. Also sets the job's
// resume checkpoint and the attempt record's committed step.
void CommitCheckpoint(v1::Job& job, const v1::CheckpointCommit& commit);

// Rank `rank`'s training indices within `segment` of epoch `epoch`.
std::vector<int64_t> SegmentShard(const v1::LedgerSegment& segment,
                                  const v1::JobSpec& spec, int64_t samples,
                                  int epoch, int rank);

}  // namespace gradsync
