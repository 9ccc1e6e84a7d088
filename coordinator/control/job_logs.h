// JobLogs: the log lines a job's ranks shipped with their metrics, over
// every attempt, in bounded memory: at most kMaxLinesPerRank lines per
// rank and kMaxLines per job, each line cut to kMaxLineBytes (at a UTF-8
// character boundary, so it stays valid); past a bound
// the oldest lines go (of that rank, or of the job) and are counted, as
// are the lines a worker says it dropped itself. Lines are numbered in the
// order they arrive (seq), so a follower asks for what came after the
// last line it saw.
//
// Not thread-safe: the owner (Coordinator, under its lock) serialises
// access.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "gradsync/v1/metrics.pb.h"

namespace gradsync {

class JobLogs {
 public:
  static constexpr size_t kMaxLinesPerRank = 1000;
  static constexpr size_t kMaxLines = 10000;
  static constexpr size_t kMaxLineBytes = 4096;

  void Append(int rank, int attempt, const v1::LogLine& line);
  // Lines the worker of `rank` dropped before reporting.
  void CountDropped(int rank, int64_t lines);

  struct Page {
    std::vector<v1::LogEntry> lines;  // oldest first
    int64_t next_seq = 0;
    int64_t dropped = 0;
  };
  // Lines with seq > after_seq, of `rank` or of every rank, the newest
  // `max_lines` of them (0 = all).
  Page Read(std::optional<int> rank, int64_t after_seq, size_t max_lines) const;

  // The newest `max_lines` lines, the per-rank counts of lines not kept
  // and the next seq, into `trail` (what survives a coordinator restart).
  void SaveTo(size_t max_lines, v1::JobTrail* trail) const;
  // Replaces the contents with what SaveTo wrote (bounds applied).
  void LoadFrom(const v1::JobTrail& trail);

 private:
  // Stores `e` (its text cut to kMaxLineBytes), then drops the oldest
  // line of its rank, or of the job, past their bounds.
  void Keep(v1::LogEntry e);
  // Drops the oldest line of `rank`.
  void DropOldest(int rank);

  std::map<int, std::deque<v1::LogEntry>> ranks_;  // each by seq
  size_t total_ = 0;                               // lines kept
  std::map<int, int64_t> dropped_;                 // by rank
  int64_t next_seq_ = 1;
};

}  // namespace gradsync
