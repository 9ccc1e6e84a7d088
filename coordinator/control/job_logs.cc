#include "coordinator/control/job_logs.h"

#include <algorithm>

namespace gradsync {

void JobLogs::Append(int rank, int attempt, const v1::LogLine& line) {
  std::deque<v1::LogEntry>& kept = ranks_[rank];
  v1::LogEntry& e = kept.emplace_back();
  e.set_seq(next_seq_++);
  e.set_rank(rank);
  e.set_attempt(attempt);
  e.set_time_unix_ms(line.time_unix_ms());
  e.set_text(line.text().substr(0, kMaxLineBytes));
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

}  // namespace gradsync
