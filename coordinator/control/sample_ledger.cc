#include "coordinator/control/sample_ledger.h"

#include <algorithm>

#include "coordinator/control/job_state.h"
#include "foundation/data_index/sampler.h"

namespace gradsync {
namespace {

v1::EpochLedger& EpochEntry(v1::Job& job, int epoch) {
  for (v1::EpochLedger& e : *job.mutable_ledger()) {
    if (e.epoch() == epoch) return e;
  }
  v1::EpochLedger* e = job.add_ledger();
  e->set_epoch(epoch);
  e->set_samples(job.train_samples());
  return *e;
}

// Entries of the segment's padded (or truncated) strided list.
int64_t SegmentTotal(const v1::LedgerSegment& s, bool drop_last) {
  return DistributedNumSamples(s.length(), s.world_size(), drop_last) *
         s.world_size();
}

// Sets the segment's committed counts from `positions` committed entries of
// its list and updates the epoch's totals.
void Commit(v1::EpochLedger& epoch, v1::LedgerSegment& s, int64_t positions,
            bool drop_last) {
  const int64_t total = SegmentTotal(s, drop_last);
  positions = std::min(positions, total);
  if (positions < s.committed() + s.committed_duplicates()) return;
  s.set_committed(std::min(positions, s.length()));
  s.set_committed_duplicates(std::max<int64_t>(0, positions - s.length()));
  int64_t committed = 0, duplicates = 0;
  for (const v1::LedgerSegment& seg : epoch.segments()) {
    committed += seg.committed();
    duplicates += seg.committed_duplicates();
  }
  epoch.set_committed(committed);
  epoch.set_duplicates(duplicates);
  if (positions == total) epoch.set_dropped(s.dropped());
}

}  // namespace

const v1::LedgerSegment& CurrentSegment(v1::Job& job, int epoch,
                                        bool* created) {
  v1::EpochLedger& e = EpochEntry(job, epoch);
  *created = false;
  for (const v1::LedgerSegment& s : e.segments()) {
    if (s.attempt() == job.attempt()) return s;
  }
  *created = true;
  const bool drop_last = job.spec().drop_last();
  v1::LedgerSegment* s = e.add_segments();
  s->set_attempt(job.attempt());
  s->set_world_size(job.world_size());
  s->set_offset(e.committed());
  s->set_length(e.samples() - e.committed());
  const int64_t total = SegmentTotal(*s, drop_last);
  s->set_padding(std::max<int64_t>(0, total - s->length()));
  s->set_dropped(std::max<int64_t>(0, s->length() - total));
  return *s;
}

void CommitCheckpoint(v1::Job& job, const v1::CheckpointCommit& commit) {
  const bool drop_last = job.spec().drop_last();
  const int64_t batch = job.spec().batch_size();
  for (v1::EpochLedger& e : *job.mutable_ledger()) {
    if (e.epoch() > commit.epoch()) continue;
    for (v1::LedgerSegment& s : *e.mutable_segments()) {
      if (s.attempt() != job.attempt()) continue;
      const int64_t per_rank =
          DistributedNumSamples(s.length(), s.world_size(), drop_last);
      // epoch_batch comes from a worker: compare before multiplying, so a
      // huge one cannot overflow.
      const int64_t rank_samples =
          e.epoch() < commit.epoch() ||
                  commit.epoch_batch() >= (per_rank + batch - 1) / batch
              ? per_rank
              : commit.epoch_batch() * batch;
      Commit(e, s, rank_samples * s.world_size(), drop_last);
    }
  }
  job.set_resume_checkpoint(commit.path());
  job.set_resume_step(commit.step());
  job.set_resume_from_snapshot(commit.uploaded());
  if (v1::AttemptRecord* a = FindAttemptRecord(job, job.attempt())) {
    a->set_committed_step(commit.step());
    a->set_checkpoint(commit.path());
  }
}

std::vector<int64_t> SegmentShard(const v1::LedgerSegment& segment,
                                  const v1::JobSpec& spec, int64_t samples,
                                  int epoch, int rank) {
  std::vector<int64_t> order =
      EpochOrder(samples, spec.seed(), epoch, spec.shuffle());
  order.erase(order.begin(),
              order.begin() + std::min<int64_t>(segment.offset(), samples));
  return StridedShard(std::move(order), segment.world_size(), rank,
                      spec.drop_last());
}

}  // namespace gradsync
