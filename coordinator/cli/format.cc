#include "coordinator/cli/format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "coordinator/control/job_state.h"

namespace gradsync::cli {
namespace {

// Left-aligned columns separated by two spaces.
std::string Table(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows) {
    for (std::string& cell : row) cell = OneLine(cell);
  }
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string LastAccuracy(const v1::Job& job) {
  if (job.metrics().eval_size() == 0) return "-";
  const v1::EvalMetrics& e = job.metrics().eval(job.metrics().eval_size() - 1);
  return absl::StrFormat("%.2f%%", 100 * e.accuracy());
}

}  // namespace

std::string StateName(v1::JobState state) { return JobStateName(state); }

std::string PhaseName(v1::Phase phase) {
  switch (phase) {
    case v1::PHASE_DATA:
      return "data loading";
    case v1::PHASE_COMPUTE:
      return "compute";
    case v1::PHASE_ALLREDUCE:
      return "all-reduce";
    default:
      return "-";
  }
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  const int64_t s = ms / 1000;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::string ProgressBar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width + 0.5);
  return absl::StrCat("[", std::string(filled, '#'),
                      std::string(width - filled, '.'), "]");
}

std::string SnapshotPoint(const v1::SnapshotMeta& meta) {
  if (meta.epoch_batch() > 0) {
    return absl::StrCat("epoch ", meta.epoch() + 1, ", batch ",
                        meta.epoch_batch());
  }
  return meta.epoch() > 0 ? absl::StrCat("end of epoch ", meta.epoch())
                          : std::string("start");
}

std::string FitWidth(absl::string_view line, int width) {
  if (width <= 0) return std::string(line);
  // Byte offsets where each UTF-8 character starts.
  std::vector<size_t> starts;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80)
      starts.push_back(i);
  }
  if (starts.size() <= static_cast<size_t>(width)) return std::string(line);
  const int keep = std::max(width - 3, 0);
  return absl::StrCat(line.substr(0, starts[keep]),
                      std::string(std::min(width, 3), '.'));
}

double RankProgress(const v1::Job& job, const v1::StepMetrics& last) {
  const int epochs = std::max(job.spec().epochs(), 1);
  const int64_t per_epoch = std::max<int64_t>(last.steps_per_epoch(), 1);
  const int64_t in_epoch = last.step() - int64_t{last.epoch()} * per_epoch;
  return std::clamp(
      (last.epoch() + static_cast<double>(in_epoch) / per_epoch) / epochs, 0.0,
      1.0);
}

std::string FormatJobTable(const std::vector<v1::Job>& jobs, int64_t now_ms) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "STATE", "WORKERS", "MODEL", "EPOCHS", "AGE", "ACCURACY"}};
  for (const v1::Job& job : jobs) {
    rows.push_back({job.id(), job.spec().name(), StateName(job.state()),
                    absl::StrCat(job.world_size(), "/",
                                 job.spec().world_size().max_workers()),
                    job.spec().model(), absl::StrCat(job.spec().epochs()),
                    FormatDuration(now_ms - job.created_unix_ms()),
                    LastAccuracy(job)});
  }
  return Table(std::move(rows));
}

std::vector<std::string> FormatRankLines(const v1::Job& job,
                                         const v1::JobMetrics& metrics) {
  std::vector<std::string> lines;
  const int epochs = std::max(job.spec().epochs(), 1);
  for (const v1::RankMetrics& r : metrics.ranks()) {
    const v1::StepMetrics& s = r.last();
    const int64_t per_epoch = std::max<int64_t>(s.steps_per_epoch(), 1);
    const int64_t in_epoch = s.step() - int64_t{s.epoch()} * per_epoch;
    const double done = RankProgress(job, s);
    lines.push_back(absl::StrFormat(
        "rank %-2d %s %3.0f%%  epoch %d/%d step %d/%d  loss %.4f  %.0f "
        "samples/s  p50 %.1f ms",
        r.rank(), ProgressBar(done, 20), 100 * done, s.epoch() + 1, epochs,
        in_epoch, per_epoch, s.loss(), s.samples_per_sec(), r.p50_step_ms()));
  }
  const v1::RankMetrics* slow = nullptr;
  for (const v1::RankMetrics& r : metrics.ranks()) {
    if (r.rank() == metrics.slowest_rank()) slow = &r;
  }
  if (slow != nullptr) {
    lines.push_back(absl::StrFormat(
        "total %.0f samples/s; slowest rank %d (p50 %.1f ms, p99 %.1f ms); "
        "bound by %s (data %.1f / compute %.1f = forward %.1f + backward "
        "%.1f + optimizer %.1f / all-reduce %.1f ms)",
        metrics.samples_per_sec(), metrics.slowest_rank(), slow->p50_step_ms(),
        slow->p99_step_ms(), PhaseName(metrics.bounding_phase()),
        slow->mean_data_wait_ms(), slow->mean_compute_ms(),
        slow->mean_forward_ms(), slow->mean_backward_ms(),
        slow->mean_optimizer_ms(), slow->mean_allreduce_ms()));
  }
  return lines;
}

namespace {

// Where the job keeps checkpoints, its last one, and what it started from.
std::string FormatCheckpointLines(const v1::Job& job) {
  const v1::CheckpointSpec& c = job.spec().checkpoint();
  std::string out = "Checkpoints: ";
  if (c.directory().empty()) {
    absl::StrAppend(&out,
                    "none on the workers; the final weights are kept "
                    "by the coordinator (gradsync model pull ",
                    job.id(), ")\n");
  } else {
    absl::StrAppend(
        &out, c.directory(),
        c.directory()[0] == '/' ? "" : " (under each worker's checkpoint root)",
        c.interval_steps() > 0 ? absl::StrCat(", every ", c.interval_steps(),
                                              " steps and at the end")
                               : ", at the end",
        "\n");
  }
  if (!job.resume_checkpoint().empty()) {
    absl::StrAppend(
        &out, "  last: step ", job.resume_step(), ", ", job.resume_checkpoint(),
        job.resume_from_snapshot() ? " (also at the coordinator)" : "", "\n");
  }
  if (!c.resume_snapshot_job().empty()) {
    absl::StrAppend(&out, "  started from: ", c.resume_snapshot_job(),
                    "'s snapshot of ",
                    c.resume_snapshot_step() > 0
                        ? absl::StrCat("step ", c.resume_snapshot_step())
                        : std::string("its latest step"),
                    "\n");
  } else if (!c.resume_from().empty()) {
    absl::StrAppend(&out, "  started from: ", c.resume_from(), "\n");
  }
  return out;
}

}  // namespace

std::string FormatJobDetail(const v1::Job& job, int64_t now_ms) {
  const v1::JobSpec& spec = job.spec();
  std::string out;
  absl::StrAppend(&out, "Job:        ", job.id(), " (", spec.name(), ")\n");
  absl::StrAppend(&out, "State:      ", StateName(job.state()), " - ",
                  job.message(), "\n");
  if (!job.stall().empty()) {
    absl::StrAppend(&out, "Stalled:    ", job.stall(), "\n");
  }
  if (job.state() == v1::JOB_STATE_PENDING &&
      job.replacement_deadline_unix_ms() > 0) {
    absl::StrAppend(
        &out, "Waiting:    for at least ",
        job.spec().world_size().min_workers(), " worker(s) to restart with, ",
        job.replacement_deadline_unix_ms() > now_ms
            ? absl::StrCat(
                  FormatDuration(job.replacement_deadline_unix_ms() - now_ms),
                  " more")
            : std::string("time is up"),
        " (--restart-wait ", FormatDuration(job.spec().restart_wait_ms()),
        "); then the job fails\n");
  }
  if (!job.persist_error().empty()) {
    absl::StrAppend(&out, "Not saved:  ", job.persist_error(), "\n");
  }
  if (!job.snapshot_error().empty()) {
    absl::StrAppend(&out, "Snapshots:  NOT STORED (", job.snapshot_failures(),
                    " failed): ", OneLine(job.snapshot_error()), "\n");
  }
  absl::StrAppend(
      &out, "Model:      ", spec.model(), ", ", spec.epochs(),
      " epoch(s), batch ", spec.batch_size(), " per rank, ",
      spec.optimizer().type() == v1::OPTIMIZER_TYPE_SGD ? "sgd" : "adam",
      " lr ", spec.optimizer().learning_rate(), "\n");
  absl::StrAppend(&out, "Data:       ", spec.dataset().path(), " split ",
                  spec.dataset().split(), " (", job.train_samples(),
                  " samples)");
  if (!spec.dataset().eval_split().empty()) {
    absl::StrAppend(&out, ", eval ", spec.dataset().eval_split(), " (",
                    job.eval_samples(), " samples)");
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "World:      ", job.world_size(), " rank(s) of ",
                  spec.world_size().min_workers(), "..",
                  spec.world_size().max_workers(), ", attempt ", job.attempt());
  if (!job.master_addr().empty()) {
    absl::StrAppend(&out, ", master ", job.master_addr(), ":",
                    job.master_port());
  }
  absl::StrAppend(&out, "\n");
  for (const v1::RankAssignment& r : job.ranks()) {
    absl::StrAppend(&out, "  rank ", r.rank(), " (local ", r.local_rank(),
                    "): worker ", r.worker_id(), " on ", r.host());
    if (!r.gpu().empty()) {
      absl::StrAppend(&out, ", cuda:", r.cuda_device(), " ", r.gpu());
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, FormatCheckpointLines(job));
  const std::vector<std::string> lines = FormatRankLines(job, job.metrics());
  if (!lines.empty()) {
    absl::StrAppend(&out, "Progress:\n");
    for (const std::string& line : lines)
      absl::StrAppend(&out, "  ", line, "\n");
  }
  for (const v1::EvalMetrics& e : job.metrics().eval()) {
    absl::StrAppend(&out,
                    absl::StrFormat("Eval:       epoch %d accuracy %.2f%% "
                                    "loss %.4f over %d samples\n",
                                    e.epoch() + 1, 100 * e.accuracy(), e.loss(),
                                    e.samples()));
  }
  if (job.attempts_size() > 1 || job.restarts() > 0) {
    absl::StrAppend(&out, "Attempts:   ", job.restarts(), " restart(s) of ",
                    spec.max_restarts(), " allowed\n");
    for (const v1::AttemptRecord& a : job.attempts()) {
      absl::StrAppend(
          &out, "  attempt ", a.attempt(), ": ", a.world_size(), " rank(s)",
          a.committed_step() > 0
              ? absl::StrCat(", committed through step ", a.committed_step())
              : ", nothing committed",
          a.outcome().empty() ? "" : absl::StrCat("; ended: ", a.outcome()),
          "\n");
    }
  }
  if (job.ledger_size() > 0) {
    // Samples count once a checkpoint commits them (what a restart would
    // not train again); a job without checkpoints commits at its end.
    absl::StrAppend(
        &out, "Ledger:     samples committed by checkpoints, per epoch\n");
    for (const v1::EpochLedger& e : job.ledger()) {
      std::vector<std::string> parts;
      for (const v1::LedgerSegment& s : e.segments()) {
        parts.push_back(absl::StrFormat("attempt %d: %d rank(s), %d from #%d",
                                        s.attempt(), s.world_size(),
                                        s.committed(), s.offset()));
      }
      absl::StrAppend(
          &out,
          absl::StrFormat(
              "  %s: %d/%d (%d padding duplicate(s)%s; %s)\n",
              e.last_epoch() > e.epoch()
                  ? absl::StrFormat("epochs %d-%d, each", e.epoch() + 1,
                                    e.last_epoch() + 1)
                  : absl::StrFormat("epoch %d", e.epoch() + 1),
              e.committed(), e.samples(), e.duplicates(),
              e.dropped() > 0 ? absl::StrFormat(", %d dropped", e.dropped())
                              : "",
              absl::StrJoin(parts, "; ")));
    }
  }
  absl::StrAppend(&out, "History:\n");
  for (const v1::Transition& t : job.transitions()) {
    absl::StrAppend(&out, "  ", FormatDuration(now_ms - t.time_unix_ms()),
                    " ago  ", StateName(t.from()), " -> ", StateName(t.to()),
                    ": ", t.reason(), "\n");
  }
  return TerminalSafe(out);
}

std::string FormatLogLine(const v1::LogEntry& line, absl::TimeZone zone) {
  // When the worker logged it (local time; a line without one has none).
  const std::string when =
      line.time_unix_ms() > 0
          ? absl::FormatTime("%H:%M:%S ",
                             absl::FromUnixMillis(line.time_unix_ms()), zone)
          : std::string();
  return absl::StrCat(when, "[rank ", line.rank(),
                      line.attempt() > 1
                          ? absl::StrCat(", attempt ", line.attempt())
                          : std::string(),
                      "] ", OneLine(line.text()), "\n");
}

std::string FormatSnapshotTable(const std::vector<v1::SnapshotMeta>& snapshots,
                                int64_t now_ms) {
  std::vector<std::vector<std::string>> rows = {
      {"STEP", "AT", "ACCURACY", "SIZE", "AGE", "SHA256"}};
  for (const v1::SnapshotMeta& m : snapshots) {
    rows.push_back({absl::StrCat(m.step()), SnapshotPoint(m),
                    m.accuracy() >= 0
                        ? absl::StrFormat("%.2f%%", 100 * m.accuracy())
                        : "-",
                    absl::StrFormat("%.1f MB", m.size_bytes() / 1e6),
                    FormatDuration(now_ms - m.created_unix_ms()) + " ago",
                    m.sha256().substr(0, 12)});
  }
  return Table(std::move(rows));
}

std::string FormatModelFileTable(const std::vector<v1::ModelFileMeta>& files,
                                 int64_t now_ms) {
  std::vector<std::vector<std::string>> rows = {
      {"SHA256", "NAME", "SIZE", "AGE", "JOBS"}};
  for (const v1::ModelFileMeta& m : files) {
    rows.push_back({m.sha256(), TerminalSafe(m.name()),
                    absl::StrFormat("%.1f MB", m.size_bytes() / 1e6),
                    FormatDuration(now_ms - m.created_unix_ms()) + " ago",
                    m.jobs().empty() ? "-" : absl::StrJoin(m.jobs(), ",")});
  }
  return Table(std::move(rows));
}

std::string FormatWorkerTable(const std::vector<v1::WorkerInfo>& workers,
                              int64_t now_ms) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "HOST", "STATE", "JOB", "RANK", "STEP", "HEARTBEAT", "DEVICES"}};
  for (const v1::WorkerInfo& w : workers) {
    std::vector<std::string> devices;
    for (const v1::Device& d : w.devices()) {
      devices.push_back(absl::StrCat(d.kind(), ":", d.index()));
    }
    rows.push_back(
        {w.worker_id(), w.host(), WorkerStateName(w.state()),
         // An idle worker that lives for one job shows it as "for <job>".
         !w.job_id().empty()          ? w.job_id()
         : !w.lives_for_job().empty() ? "for " + w.lives_for_job()
                                      : "-",
         w.rank() >= 0 ? absl::StrCat(w.rank()) : "-", absl::StrCat(w.step()),
         FormatDuration(now_ms - w.last_heartbeat_unix_ms()) + " ago",
         devices.empty() ? "cpu" : absl::StrJoin(devices, ",")});
  }
  return Table(std::move(rows));
}

}  // namespace gradsync::cli
