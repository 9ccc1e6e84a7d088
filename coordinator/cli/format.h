// Human-readable rendering of jobs, workers and metrics for the `gradsync`
// CLI, and JSON rendering for --json. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "foundation/text/terminal_text.h"
#include "gradsync/v1/job_service.pb.h"
#include "gradsync/v1/snapshot.pb.h"
#include "gradsync/v1/worker_service.pb.h"

namespace gradsync::cli {

// Strings from the coordinator (job messages, hosts, errors, which carry
// what workers sent) pass through TerminalSafe or OneLine
// (foundation/text/terminal_text.h) before they are printed; the Format*
// functions below return safe text.
using ::gradsync::OneLine;
using ::gradsync::TerminalSafe;

// "RUNNING", "adam", "data loading", ...
std::string StateName(v1::JobState state);
std::string PhaseName(v1::Phase phase);
// "3s", "4m05s", "2h10m".
std::string FormatDuration(int64_t ms);
// Where a snapshot stands, with epochs counted from 1: "end of epoch 2"
// (epoch 2, epoch_batch 0), "epoch 2, batch 120" (epoch 1, epoch_batch
// 120), "start" (nothing trained).
std::string SnapshotPoint(const v1::SnapshotMeta& meta);
// A bar of `width` cells filled to fraction (clamped to [0, 1]).
std::string ProgressBar(double fraction, int width);
// `line` cut to at most `width` columns (UTF-8 characters), ending in "..."
// when cut; `width` <= 0 leaves it whole.
std::string FitWidth(absl::string_view line, int width);
// How far a rank whose last step is `last` is through the job's epochs,
// in [0, 1].
double RankProgress(const v1::Job& job, const v1::StepMetrics& last);

// Table of jobs: ID, NAME, STATE, WORKERS, MODEL, EPOCHS, AGE, ACCURACY.
std::string FormatJobTable(const std::vector<v1::Job>& jobs, int64_t now_ms);
// Every detail of one job: spec, ranks, metrics, evaluation, transitions.
std::string FormatJobDetail(const v1::Job& job, int64_t now_ms);
// One line of a job's log: "HH:MM:SS [rank R] text" (when the worker
// logged it, in `zone`; no time for a line without one), with the attempt
// when it is not the first ("[rank R, attempt A] text").
std::string FormatLogLine(const v1::LogEntry& line,
                          absl::TimeZone zone = absl::LocalTimeZone());
// Table of workers: ID, HOST, STATE, JOB, RANK, STEP, HEARTBEAT, DEVICES.
// `gradsync model list`: step, epoch, accuracy, size, age, checksum.
std::string FormatSnapshotTable(const std::vector<v1::SnapshotMeta>& snapshots,
                                int64_t now_ms);
// `gradsync model files`: digest, name, size, age and the jobs using each.
std::string FormatModelFileTable(const std::vector<v1::ModelFileMeta>& files,
                                 int64_t now_ms);

std::string FormatWorkerTable(const std::vector<v1::WorkerInfo>& workers,
                              int64_t now_ms);
// One line per rank: progress bar, epoch/step, loss, samples/s, p50 step
// time, plus a footer naming the slowest rank and the bounding phase.
std::vector<std::string> FormatRankLines(const v1::Job& job,
                                         const v1::JobMetrics& metrics);

}  // namespace gradsync::cli
