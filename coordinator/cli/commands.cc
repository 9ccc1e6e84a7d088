#include "coordinator/cli/commands.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/cli/curve_plot.h"
#include "coordinator/cli/file_output.h"
#include "coordinator/cli/flag_fields.h"
#include "coordinator/cli/format.h"
#include "coordinator/cli/watch_view.h"
#include "coordinator/client/channel.h"
#include "coordinator/control/job_state.h"
#include "coordinator/wire/file_chunks.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/proto_json.h"
#include "coordinator/wire/snapshot_stream.h"
#include "foundation/torch_file/state_dict_export.h"

namespace gradsync::cli {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// "INVALID_ARGUMENT", "NOT_FOUND", ... (gRPC and absl share the codes).
std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace

std::shared_ptr<v1::JobService::StubInterface> MakeJobStub(
    const std::string& address, const std::string& token,
    const ClientTls& tls) {
  return v1::JobService::NewStub(MakeCoordinatorChannel(address, token, tls));
}

void Cli::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(
                            static_cast<int64_t>(options_.timeout_s * 1000)));
}

int Cli::Fail(const grpc::Status& status) const {
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    message = absl::StrCat("cannot reach the coordinator (", message,
                           "); is it running? set --coordinator or "
                           "GRADSYNC_COORDINATOR (and --tls-ca when it "
                           "serves TLS)");
  }
  err_ << "gradsync: " << CodeName(status.error_code()) << ": "
       << TerminalSafe(message) << "\n";
  return 1;
}

int Cli::Submit(const JobFlags& flags, bool then_watch, bool quiet) {
  absl::StatusOr<v1::JobSpec> spec = BuildJobSpec(flags);
  if (!spec.ok()) {
    err_ << "gradsync: " << spec.status().message() << "\n";
    return 1;
  }
  if (flags.model_file) {
    absl::StatusOr<v1::ModelFileMeta> uploaded =
        UploadModelFile(*flags.model_file);
    if (!uploaded.ok()) {
      err_ << "gradsync: --model-file " << TerminalSafe(*flags.model_file)
           << ": " << TerminalSafe(uploaded.status().message()) << "\n";
      return 1;
    }
    spec->set_model_file_sha256(uploaded->sha256());
    if (!quiet && !options_.json) {
      out_ << "model file " << TerminalSafe(uploaded->name())
           << " uploaded: " << uploaded->sha256() << "\n";
    }
  }
  v1::SubmitJobRequest request;
  *request.mutable_spec() = std::move(*spec);
  v1::Job job;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s = stub_->SubmitJob(&context, request, &job);
  if (!s.ok()) {
    // Name the flag the user types for the field the coordinator names.
    const std::string flag = FlagOfError(s.error_message());
    if (!flag.empty() &&
        (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
         s.error_code() == grpc::StatusCode::FAILED_PRECONDITION)) {
      s = grpc::Status(s.error_code(),
                       absl::StrCat(s.error_message(), " (", flag, ")"));
    }
    return Fail(s);
  }
  if (options_.json) {
    out_ << ToJson(job) << "\n";
  } else if (quiet) {
    out_ << job.id() << "\n";
  } else {
    out_ << job.id() << " submitted: " << StateName(job.state()) << " - "
         << TerminalSafe(job.message()) << "\n";
  }
  out_.flush();
  return then_watch ? Watch(job.id()) : 0;
}

int Cli::Status(const std::string& job_id) {
  v1::Job job;
  if (grpc::Status s = ReadJob(job_id, &job); !s.ok()) return Fail(s);
  out_ << (options_.json ? ToJson(job) + "\n" : FormatJobDetail(job, NowMs()));
  // A failed job: why, in the words of the rank that failed it.
  const v1::AttemptRecord* last = job.attempts_size() > 0
                                      ? &job.attempts(job.attempts_size() - 1)
                                      : nullptr;
  if (!options_.json && job.state() == v1::JOB_STATE_FAILED &&
      last != nullptr && last->has_failed_rank()) {
    constexpr int kTail = 10;
    v1::GetJobLogsRequest logs_request;
    logs_request.set_job_id(job_id);
    logs_request.set_rank(last->failed_rank());
    logs_request.set_max_lines(kTail);
    v1::GetJobLogsResponse logs;
    if (ReadLogs(logs_request, &logs).ok() && logs.lines_size() > 0) {
      out_ << "Last log lines of rank " << last->failed_rank()
           << " (gradsync logs " << job_id << " --rank " << last->failed_rank()
           << "):\n";
      for (const v1::LogEntry& line : logs.lines()) {
        out_ << "  " << FormatLogLine(line);
      }
    }
  }
  return 0;
}

grpc::Status Cli::ReadJob(const std::string& job_id, v1::Job* job) const {
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub_->GetJob(&context, request, job);
}

grpc::Status Cli::ReadLogs(const v1::GetJobLogsRequest& request,
                           v1::GetJobLogsResponse* response) const {
  grpc::ClientContext context;
  SetDeadline(&context);
  return stub_->GetJobLogs(&context, request, response);
}

int Cli::Logs(const std::string& job_id, std::optional<int> rank, bool follow,
              absl::Duration poll) {
  v1::GetJobLogsRequest request;
  request.set_job_id(job_id);
  if (rank) request.set_rank(*rank);
  int64_t dropped = 0;
  while (true) {
    v1::GetJobLogsResponse response;
    if (grpc::Status s = ReadLogs(request, &response); !s.ok()) return Fail(s);
    if (options_.json) {
      if (response.lines_size() > 0) out_ << ToJson(response) << "\n";
    } else {
      if (response.dropped() > dropped) {
        out_ << "(" << response.dropped() - dropped
             << " older line(s) dropped: the coordinator keeps the newest "
                "1,000 per rank)\n";
      }
      for (const v1::LogEntry& line : response.lines()) {
        out_ << FormatLogLine(line);
      }
    }
    out_.flush();
    dropped = response.dropped();
    request.set_after_seq(response.next_seq());
    // Done: not following, or the job ended and nothing new came.
    if (!follow) return 0;
    if (IsTerminal(response.state()) && response.lines_size() == 0) {
      // Following ends when the job does: say how (kubectl logs -f stops
      // without a word, and a user cannot tell an end from a hang-up).
      if (!options_.json) {
        out_ << "(" << job_id << " ended: " << StateName(response.state())
             << ")\n";
      }
      return 0;
    }
    if (response.lines_size() == 0) absl::SleepFor(poll);
  }
}

int Cli::List(int limit, bool quiet) {
  // Page through until `limit` jobs (0: all) or the last page.
  v1::ListJobsResponse all;
  v1::ListJobsRequest request;
  do {
    request.set_page_size(limit > 0 ? std::min(limit - all.jobs_size(), 1000)
                                    : 1000);
    v1::ListJobsResponse page;
    grpc::ClientContext context;
    SetDeadline(&context);
    grpc::Status s = stub_->ListJobs(&context, request, &page);
    if (!s.ok()) return Fail(s);
    for (v1::Job& job : *page.mutable_jobs()) {
      *all.add_jobs() = std::move(job);
    }
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty() &&
           (limit <= 0 || all.jobs_size() < limit));
  if (options_.json) {
    out_ << ToJson(all) << "\n";
  } else if (quiet) {
    for (const v1::Job& job : all.jobs()) out_ << job.id() << "\n";
  } else {
    std::vector<v1::Job> jobs(all.jobs().begin(), all.jobs().end());
    out_ << FormatJobTable(jobs, NowMs());
  }
  return 0;
}

int Cli::Delete(const std::string& job_id) {
  v1::DeleteJobRequest request;
  request.set_job_id(job_id);
  v1::DeleteJobResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s = stub_->DeleteJob(&context, request, &response);
  if (!s.ok()) return Fail(s);
  out_ << TerminalSafe(job_id) << " deleted\n";
  return 0;
}

int Cli::Cancel(const std::string& job_id, const std::string& reason) {
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::Job job;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s = stub_->CancelJob(&context, request, &job);
  if (!s.ok()) return Fail(s);
  if (options_.json) {
    out_ << ToJson(job) << "\n";
  } else {
    out_ << job.id() << " " << StateName(job.state()) << ": "
         << TerminalSafe(job.message()) << "\n";
  }
  return 0;
}

int Cli::Workers(int wait_for) {
  v1::ListWorkersResponse response;
  const absl::Time deadline = absl::Now() + absl::Seconds(options_.timeout_s);
  bool reached = false;  // some call was answered
  int64_t alive = 0;
  while (true) {
    grpc::ClientContext context;
    if (wait_for > 0) {
      // Short calls that wait for the channel: a coordinator still starting
      // is waited for, not reported unreachable.
      context.set_wait_for_ready(true);
      context.set_deadline(absl::ToChronoTime(
          std::min(deadline, absl::Now() + absl::Seconds(1))));
    } else {
      SetDeadline(&context);
    }
    grpc::Status s =
        stub_->ListWorkers(&context, v1::ListWorkersRequest(), &response);
    if (s.ok()) {
      reached = true;
      alive =
          std::count_if(response.workers().begin(), response.workers().end(),
                        [](const v1::WorkerInfo& w) {
                          return w.state() != v1::WORKER_STATE_DEAD;
                        });
      if (alive >= wait_for) break;
    }
    const bool late = absl::Now() >= deadline;
    if (!s.ok() && !reached && (wait_for == 0 || late)) {
      if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        s = grpc::Status(
            grpc::StatusCode::UNAVAILABLE,
            absl::StrFormat("no answer within %.0f s", options_.timeout_s));
      }
      return Fail(s);
    }
    if (late) {
      err_ << "gradsync: DEADLINE_EXCEEDED: waited "
           << absl::StrFormat("%.0f", options_.timeout_s) << " s for "
           << wait_for << " live workers; " << alive
           << " registered (start more, or raise --timeout)\n";
      return 1;
    }
    if (s.ok()) absl::SleepFor(absl::Milliseconds(200));
  }
  if (options_.json) {
    out_ << ToJson(response) << "\n";
  } else {
    std::vector<v1::WorkerInfo> workers(response.workers().begin(),
                                        response.workers().end());
    out_ << FormatWorkerTable(workers, NowMs());
  }
  return 0;
}

int Cli::ModelList(const std::string& job_id) {
  v1::ListSnapshotsRequest request;
  request.set_job_id(job_id);
  v1::ListSnapshotsResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s = stub_->ListSnapshots(&context, request, &response);
  if (!s.ok()) return Fail(s);
  if (options_.json) {
    out_ << ToJson(response) << "\n";
    return 0;
  }
  // Uploads the coordinator could not store (its disk is full) are told,
  // not taken for snapshots never taken.
  std::string not_stored;
  {
    v1::GetJobRequest get;
    get.set_job_id(job_id);
    v1::Job job;
    grpc::ClientContext job_context;
    SetDeadline(&job_context);
    if (stub_->GetJob(&job_context, get, &job).ok() &&
        !job.snapshot_error().empty()) {
      not_stored = absl::StrCat(
          job.snapshot_failures(),
          " upload(s) could not be stored: ", OneLine(job.snapshot_error()));
    }
  }
  if (response.snapshots_size() == 0) {
    out_ << job_id
         << (not_stored.empty()
                 ? " has no snapshots yet"
                 : absl::StrCat(" has no stored snapshots: ", not_stored))
         << "\n";
    return 0;
  }
  out_ << FormatSnapshotTable(
      {response.snapshots().begin(), response.snapshots().end()}, NowMs());
  if (!not_stored.empty()) {
    out_ << "The newest snapshots are missing: " << not_stored << "\n";
  }
  return 0;
}

absl::StatusOr<v1::ModelFileMeta> Cli::UploadModelFile(
    const std::string& path) {
  grpc::ClientContext context;
  // Big files take a while: the upload gets ten times the call deadline.
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(
                           static_cast<int64_t>(options_.timeout_s * 10000)));
  v1::ModelFileMeta stored;
  auto writer = stub_->UploadModelFile(&context, &stored);
  v1::ModelFileMeta meta;
  meta.set_name(std::filesystem::path(path).filename().string());
  absl::Status sent = FinishUpload<v1::ModelFileChunk>(
      context, *writer,
      [&](const std::function<bool(const v1::ModelFileChunk&)>& write) {
        return WriteFileChunks<v1::ModelFileChunk>(
            path, "model",
            [&](v1::ModelFileChunk* chunk, int64_t size) {
              meta.set_size_bytes(size);
              *chunk->mutable_meta() = meta;
            },
            [](v1::ModelFileChunk* chunk) { chunk->clear_meta(); }, write);
      });
  if (!sent.ok()) return sent;
  return stored;
}

int Cli::ModelFiles() {
  v1::ListModelFilesResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s =
      stub_->ListModelFiles(&context, v1::ListModelFilesRequest(), &response);
  if (!s.ok()) return Fail(s);
  if (options_.json) {
    out_ << ToJson(response) << "\n";
  } else if (response.files_size() == 0) {
    out_ << "no model files (gradsync submit --model-file FILE uploads "
            "one)\n";
  } else {
    out_ << FormatModelFileTable(
        {response.files().begin(), response.files().end()}, NowMs());
  }
  return 0;
}

int Cli::ModelFileDelete(const std::string& sha256) {
  v1::DeleteModelFileRequest request;
  request.set_sha256(sha256);
  v1::DeleteModelFileResponse response;
  grpc::ClientContext context;
  SetDeadline(&context);
  grpc::Status s = stub_->DeleteModelFile(&context, request, &response);
  if (!s.ok()) return Fail(s);
  if (!options_.json) out_ << "deleted model file " << sha256 << "\n";
  return 0;
}

int Cli::ModelPullTorchScript(const std::string& job_id,
                              const std::string& out_file) {
  v1::Job job;
  if (grpc::Status s = ReadJob(job_id, &job); !s.ok()) return Fail(s);
  if (job.trained_model_sha256().empty()) {
    err_ << "gradsync: " << job_id
         << (job.spec().model_file_sha256().empty()
                 ? " trains a built-in model, which has no TorchScript form; "
                   "pull its weights with --state-dict"
                 : " has no trained TorchScript module (yet): rank 0 uploads "
                   "it when the job succeeds")
         << "\n";
    return 1;
  }
  v1::PullModelFileRequest request;
  request.set_sha256(job.trained_model_sha256());
  grpc::ClientContext context;  // no deadline: a large model takes a while
  auto reader = stub_->PullModelFile(&context, request);
  v1::ModelFileMeta meta;
  std::string data;
  if (absl::Status s =
          ReadChunkStream("model file", context, *reader, &meta, &data);
      !s.ok()) {
    return Fail(ToGrpcStatus(s));
  }
  if (absl::Status s = WriteWholeFile(out_file, data); !s.ok()) {
    err_ << "gradsync: " << s.message() << "\n";
    return 1;
  }
  if (options_.json) {
    out_ << ToJson(meta) << "\n";
  } else {
    out_ << "wrote " << out_file << ": " << job_id
         << "'s trained module as TorchScript ("
         << absl::StrFormat("%.1f MB", meta.size_bytes() / 1e6)
         << "); load it with torch.jit.load(\"" << out_file << "\")\n";
  }
  return 0;
}

int Cli::ModelPull(const std::string& job_id, int64_t step, bool has_step,
                   const std::string& out_file, bool state_dict) {
  v1::PullSnapshotRequest request;
  request.set_job_id(job_id);
  request.set_step(step);
  request.set_has_step(has_step);
  grpc::ClientContext context;  // no deadline: a large model takes a while
  auto reader = stub_->PullSnapshot(&context, request);
  v1::SnapshotMeta meta;
  std::string data;
  // Nothing is written unless every byte arrived in order and checks out.
  if (absl::Status s = ReadSnapshotChunks(context, *reader, &meta, &data);
      !s.ok()) {
    return Fail(ToGrpcStatus(s));
  }
  StateDictFile weights;
  if (state_dict) {
    absl::StatusOr<StateDictFile> exported = ExportStateDict(data);
    if (!exported.ok()) {
      err_ << "gradsync: " << job_id << " step " << meta.step() << ": "
           << exported.status().message() << "\n";
      return 1;
    }
    weights = std::move(*exported);
  }
  if (absl::Status s =
          WriteWholeFile(out_file, state_dict ? weights.bytes : data);
      !s.ok()) {
    err_ << "gradsync: " << s.message() << "\n";
    return 1;
  }
  if (options_.json) {
    out_ << ToJson(meta) << "\n";
  } else if (state_dict) {
    out_ << "wrote " << out_file << ": " << job_id << " step " << meta.step()
         << ", the model's state_dict (" << weights.tensors << " tensors, "
         << absl::StrFormat("%.1f MB", weights.storage_bytes / 1e6)
         << "); load it with torch.load(\"" << out_file
         << "\", weights_only=True)\n";
  } else {
    out_ << "wrote " << out_file << ": " << job_id << " step " << meta.step()
         << " (" << SnapshotPoint(meta) << ", "
         << absl::StrFormat("%.1f MB", meta.size_bytes() / 1e6) << ", sha256 "
         << meta.sha256().substr(0, 12) << ")\n";
  }
  return 0;
}

int Cli::Plot(const std::string& job_id, const std::string& out_file) {
  const bool png = absl::EndsWith(out_file, ".png");
  const bool to_stdout = out_file == "-";
  if (out_file.empty() && !options_.json) {
    err_ << "gradsync: plot needs -o FILE.png, -o FILE.csv or -o - (CSV on "
            "standard output), or --json\n";
    return 2;
  }
  if (!out_file.empty() && !png && !to_stdout &&
      !absl::EndsWith(out_file, ".csv")) {
    err_ << "gradsync: plot writes a .png or a .csv file, or - for CSV on "
            "standard output (got -o "
         << out_file << ")\n";
    return 2;
  }
  v1::Job job;
  if (grpc::Status s = ReadJob(job_id, &job); !s.ok()) return Fail(s);
  v1::GetJobCurvesRequest request;
  request.set_job_id(job_id);
  v1::JobCurves curves;
  grpc::ClientContext context;
  SetDeadline(&context);
  if (grpc::Status s = stub_->GetJobCurves(&context, request, &curves);
      !s.ok()) {
    return Fail(s);
  }
  if (to_stdout) {
    out_ << CurvesCsv(curves);
    return 0;
  }
  if (out_file.empty()) {  // --json alone
    out_ << ToJson(curves) << "\n";
    return 0;
  }
  std::string data;
  if (png) {
    absl::StatusOr<std::string> drawn = CurvesPng(
        curves, absl::StrCat(job_id, "  ", job.spec().name(), " (",
                             job.spec().model(), ", ", job.world_size(),
                             " ranks, ", JobStateName(job.state()), ")"));
    if (!drawn.ok()) return Fail(ToGrpcStatus(drawn.status()));
    data = std::move(*drawn);
  } else {
    data = CurvesCsv(curves);
  }
  if (absl::Status s = WriteWholeFile(out_file, data); !s.ok()) {
    err_ << "gradsync: " << s.message() << "\n";
    return 1;
  }
  if (options_.json) {
    out_ << ToJson(curves) << "\n";
  } else {
    out_ << "wrote " << out_file << ": " << job_id << ", "
         << curves.train_size() << " training points"
         << (curves.stride() > 1
                 ? absl::StrCat(" (every ", curves.stride(), "th step)")
                 : "")
         << ", " << curves.eval_size() << " evaluation(s)\n";
  }
  return 0;
}

int Cli::Watch(const std::string& job_id) {
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  WatchView view;
  size_t drawn = 0;  // lines of the live block currently on screen
  absl::Time last_draw = absl::InfinitePast();
  bool dirty = false;  // events applied since the last draw
  auto draw = [&](bool force) {
    if (!dirty) return;
    const absl::Time now = absl::Now();
    // Redraw at most 10 times a second in place, every 2 s otherwise.
    const absl::Duration period =
        options_.live ? absl::Milliseconds(100) : absl::Seconds(2);
    if (!force && now - last_draw < period) return;
    last_draw = now;
    dirty = false;
    const std::vector<std::string> block =
        view.Block(NowMs(), options_.live ? options_.width : 0);
    if (options_.live) {
      for (size_t i = 0; i < drawn; ++i) out_ << "\x1b[1A\x1b[2K";
      drawn = block.size();
    }
    for (const std::string& line : block) out_ << line << "\n";
    out_.flush();
  };
  // A coordinator that goes away (a restart) is waited for: the stream is
  // opened again, with backoff, for up to kReconnectFor; its first event is
  // the job's current record.
  constexpr absl::Duration kReconnectFor = absl::Minutes(2);
  absl::Time unreachable_since = absl::InfiniteFuture();
  absl::Duration backoff = absl::Milliseconds(250);
  bool connected = false;  // a wrong address fails at once
  grpc::Status s;
  while (true) {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderInterface<v1::JobEvent>> reader =
        stub_->WatchJob(&context, request);
    v1::JobEvent event;
    while (reader->Read(&event)) {
      connected = true;
      unreachable_since = absl::InfiniteFuture();
      backoff = absl::Milliseconds(250);
      if (options_.json) {
        out_ << ToJson(event) << "\n";
        out_.flush();
        view.Apply(event);
        continue;
      }
      std::vector<std::string> log = view.Apply(event);
      dirty = true;
      if (!log.empty() && options_.live) {
        for (size_t i = 0; i < drawn; ++i) out_ << "\x1b[1A\x1b[2K";
        drawn = 0;
      }
      for (const std::string& line : log) out_ << line << "\n";
      draw(!log.empty());
    }
    s = reader->Finish();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || !connected ||
        IsTerminal(view.job().state())) {
      break;
    }
    const absl::Time now = absl::Now();
    if (unreachable_since == absl::InfiniteFuture()) {
      unreachable_since = now;
      err_ << "gradsync: lost the coordinator ("
           << TerminalSafe(s.error_message()) << "); reconnecting for up to "
           << absl::FormatDuration(kReconnectFor) << "\n";
    }
    if (now - unreachable_since > kReconnectFor) break;
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
  if (!s.ok()) return Fail(s);
  if (!options_.json) {
    draw(true);
    for (const std::string& line : view.Summary()) out_ << line << "\n";
  }
  const v1::JobState state = view.job().state();
  if (!IsTerminal(state)) {
    err_ << "gradsync: watch ended before " << job_id << " finished\n";
    return 1;
  }
  return state == v1::JOB_STATE_SUCCEEDED ? 0 : 1;
}

}  // namespace gradsync::cli
