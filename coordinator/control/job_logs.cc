#include "coordinator/control/job_logs.h"

#include <algorithm>

#include "coordinator/control/bounded_text.h"

namespace gradsync {

void JobLogs::Append(int rank, int attempt, const v1::LogLine& line) {
  v1::LogEntry e;
  e.set_seq(next_seq_++);
  e.set_rank(rank);
  e.set_attempt(attempt);
  e.set_time_unix_ms(line.time_unix_ms());
  e.set_text(line.text());
  Keep(std::move(e));
}

void JobLogs::Keep(v1::LogEntry e) {
  e.set_text(CutAtCharacter(e.text(), kMaxLineBytes));
  const int rank = e.rank();
  std::deque<v1::LogEntry>& kept = ranks_[rank];
  kept.push_back(std::move(e));
  ++total_;
  if (kept.size() > kMaxLinesPerRank) DropOldest(rank);
  if (total_ > kMaxLines) {
    // The job's oldest line: the smallest seq at the front of a rank.
    int oldest = rank;
    for (const auto& [r, lines] : ranks_) {
      if (!lines.empty() &&
          lines.front().seq() < ranks_[oldest].front().seq()) {
        oldest = r;
      }
    }
    DropOldest(oldest);
  }
}

void JobLogs::DropOldest(int rank) {
  ranks_[rank].pop_front();
  --total_;
  ++dropped_[rank];
}

void JobLogs::CountDropped(int rank, int64_t lines) {
  if (lines > 0) dropped_[rank] += lines;
}

JobLogs::Page JobLogs::Read(std::optional<int> rank, int64_t after_seq,
                            size_t max_lines) const {
  Page page;
  page.next_seq = std::max(after_seq, next_seq_ - 1);
  for (const auto& [r, n] : dropped_) {
    if (!rank || *rank == r) page.dropped += n;
  }
  for (const auto& [r, lines] : ranks_) {
    if (rank && *rank != r) continue;
    for (auto it = lines.rbegin(); it != lines.rend() && it->seq() > after_seq;
         ++it) {
      page.lines.push_back(*it);
    }
  }
  std::sort(page.lines.begin(), page.lines.end(),
            [](const v1::LogEntry& a, const v1::LogEntry& b) {
              return a.seq() < b.seq();
            });
  if (max_lines > 0 && page.lines.size() > max_lines) {
    page.lines.erase(page.lines.begin(), page.lines.end() - max_lines);
  }
  return page;
}

void JobLogs::SaveTo(size_t max_lines, v1::JobTrail* trail) const {
  const Page page = Read(std::nullopt, 0, max_lines);
  std::map<int, int64_t> dropped = dropped_;
  // Lines kept here but left out of the trail count as dropped there.
  std::map<int, int64_t> kept;
  for (const v1::LogEntry& e : page.lines) ++kept[e.rank()];
  for (const auto& [rank, lines] : ranks_) {
    dropped[rank] += static_cast<int64_t>(lines.size()) - kept[rank];
  }
  for (const v1::LogEntry& e : page.lines) *trail->add_logs() = e;
  for (const auto& [rank, n] : dropped) {
    if (n > 0) (*trail->mutable_logs_dropped())[rank] = n;
  }
  trail->set_next_log_seq(next_seq_);
}

void JobLogs::LoadFrom(const v1::JobTrail& trail) {
  ranks_.clear();
  total_ = 0;
  dropped_.clear();
  for (const auto& [rank, n] : trail.logs_dropped()) dropped_[rank] = n;
  next_seq_ = std::max<int64_t>(trail.next_log_seq(), 1);
  for (const v1::LogEntry& e : trail.logs()) {
    if (e.seq() >= next_seq_) next_seq_ = e.seq() + 1;
    Keep(e);
  }
}

}  // namespace gradsync
