#include "coordinator/control/sample_ledger.h"

#include <algorithm>

#include "coordinator/control/job_state.h"
#include "foundation/data_index/sampler.h"

namespace gradsync {
namespace {

bool Complete(const v1::EpochLedger& e) {
  return e.committed() + e.dropped() >= e.samples();
}

bool SameSegments(const v1::EpochLedger& a, const v1::EpochLedger& b) {
  if (a.samples() != b.samples() || a.committed() != b.committed() ||
      a.duplicates() != b.duplicates() || a.dropped() != b.dropped() ||
      a.segments_size() != b.segments_size()) {
    return false;
  }
  for (int i = 0; i < a.segments_size(); ++i) {
    if (a.segments(i).SerializeAsString() !=
        b.segments(i).SerializeAsString()) {
      return false;
    }
  }
  return true;
}

// Orders the entries by epoch and merges each complete one into the run
// before it when it continues it with the same counts and segments.
void Compact(v1::Job& job) {
  auto* ledger = job.mutable_ledger();
  std::sort(ledger->begin(), ledger->end(),
            [](const v1::EpochLedger& a, const v1::EpochLedger& b) {
              return a.epoch() < b.epoch();
            });
  int kept = 0;
  for (int i = 0; i < ledger->size(); ++i) {
    v1::EpochLedger& e = *ledger->Mutable(i);
    if (kept > 0) {
      v1::EpochLedger& run = *ledger->Mutable(kept - 1);
      if (Complete(run) && Complete(e) && e.epoch() == LastEpoch(run) + 1 &&
          LastEpoch(e) == e.epoch() && SameSegments(run, e)) {
        run.set_last_epoch(e.epoch());
        continue;
      }
    }
    if (kept != i) ledger->SwapElements(kept, i);
    ++kept;
  }
  ledger->DeleteSubrange(kept, ledger->size() - kept);
}

v1::EpochLedger* FindEntry(v1::Job& job, int epoch) {
  for (v1::EpochLedger& e : *job.mutable_ledger()) {
    if (e.epoch() <= epoch && epoch <= LastEpoch(e)) return &e;
  }
  return nullptr;
}

v1::EpochLedger& EpochEntry(v1::Job& job, int epoch) {
  if (v1::EpochLedger* e = FindEntry(job, epoch)) return *e;
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

int LastEpoch(const v1::EpochLedger& entry) {
  return std::max(entry.epoch(), entry.last_epoch());
}

const v1::LedgerSegment& CurrentSegment(v1::Job& job, int epoch,
                                        bool* created) {
  v1::EpochLedger& e = EpochEntry(job, epoch);
  *created = false;
  for (const v1::LedgerSegment& s : e.segments()) {
    if (s.attempt() == job.attempt()) return s;
  }
  if (Complete(e)) {
    // Nothing left to train: an empty segment, not recorded (asking for a
    // finished epoch must not grow the ledger).
    thread_local v1::LedgerSegment done;
    done.Clear();
    done.set_attempt(job.attempt());
    done.set_world_size(job.world_size());
    done.set_offset(e.samples());
    return done;
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
  Compact(job);
  job.set_resume_checkpoint(commit.path());
  job.set_resume_step(commit.step());
  job.set_resume_from_snapshot(commit.uploaded());
  if (v1::AttemptRecord* a = FindAttemptRecord(job, job.attempt())) {
    a->set_committed_step(commit.step());
    a->set_checkpoint(commit.path());
  }
}

void ForgetUncommitted(v1::Job& job, int attempt) {
  auto* ledger = job.mutable_ledger();
  for (v1::EpochLedger& e : *ledger) {
    auto* segments = e.mutable_segments();
    segments->erase(std::remove_if(segments->begin(), segments->end(),
                                   [attempt](const v1::LedgerSegment& s) {
                                     return s.attempt() == attempt &&
                                            s.committed() == 0 &&
                                            s.committed_duplicates() == 0;
                                   }),
                    segments->end());
  }
  ledger->erase(std::remove_if(ledger->begin(), ledger->end(),
                               [](const v1::EpochLedger& e) {
                                 return e.segments().empty();
                               }),
                ledger->end());
  Compact(job);
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
