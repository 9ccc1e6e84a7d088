// The `gradsync` CLI's subcommands, written against JobService's
// StubInterface so tests can run them against an in-process server.
// Each returns the process exit code: 0 success, 1 failure (the error is
// printed to `err` as "gradsync: CODE: message").
// Thread-compatible: one Cli per thread.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "coordinator/cli/job_flags.h"
#include "coordinator/wire/tls.h"
#include "gradsync/v1/job_service.grpc.pb.h"

namespace gradsync::cli {

struct CliOptions {
  bool json = false;      // machine-readable output
  double timeout_s = 10;  // deadline of unary calls
  bool live = false;      // redraw the watch block in place (a terminal)
  int width = 0;          // the terminal's columns when live (0: uncut)
};

class Cli {
 public:
  Cli(std::shared_ptr<v1::JobService::StubInterface> stub, CliOptions options,
      std::ostream& out, std::ostream& err)
      : stub_(std::move(stub)), options_(options), out_(out), err_(err) {}

  // With `quiet`, prints only the job id.
  int Submit(const JobFlags& flags, bool then_watch, bool quiet = false);
  int Status(const std::string& job_id);
  // `gradsync list [--limit N] [-q]`: jobs newest first; with `quiet`,
  // only their ids (what shell completion offers).
  int List(int limit, bool quiet = false);
  // Follows the job until it is terminal; exit 0 only if it SUCCEEDED.
  int Watch(const std::string& job_id);
  int Cancel(const std::string& job_id, const std::string& reason);
  // `gradsync delete JOB`: forgets a finished job and its snapshots.
  int Delete(const std::string& job_id);
  // `gradsync workers [--wait N]`: the registered workers; with N > 0,
  // first waits up to --timeout seconds (retrying while the coordinator is
  // unreachable) until N of them are alive (not DEAD), else fails naming
  // how many there are.
  int Workers(int wait_for);
  // `gradsync model list JOB`: the coordinator's snapshots of a job.
  int ModelList(const std::string& job_id);
  // `gradsync model pull JOB [--step N] -o FILE [--state-dict]`: the
  // snapshot of step N (default: the latest), checksum verified, written
  // atomically to FILE; with `state_dict`, only its model weights, in the
  // form weights-only loaders open (foundation/torch_file).
  int ModelPull(const std::string& job_id, int64_t step, bool has_step,
                const std::string& out_file, bool state_dict = false);
  // `gradsync model pull JOB --format torchscript -o FILE`: the trained
  // module of a job that trained a model file, as TorchScript.
  int ModelPullTorchScript(const std::string& job_id,
                           const std::string& out_file);
  // `gradsync model files`: the model files the coordinator keeps and the
  // jobs using each; `gradsync model files delete SHA256` removes one no
  // job uses.
  int ModelFiles();
  int ModelFileDelete(const std::string& sha256);
  // `gradsync plot JOB [-o FILE]`: the job's loss, samples/s and accuracy
  // against step, as a PNG (FILE ends in .png), CSV (.csv) or CSV on
  // standard output (-); with --json the curves are printed too, and
  // --json without -o prints only them.
  int Plot(const std::string& job_id, const std::string& out_file);
  // `gradsync logs JOB [--rank R] [-f]`: the log lines the job's ranks
  // shipped, oldest first; with `follow`, new lines as they come until the
  // job has ended (polling every `poll`).
  int Logs(const std::string& job_id, std::optional<int> rank, bool follow,
           absl::Duration poll = absl::Seconds(1));

 private:
  void SetDeadline(grpc::ClientContext* context) const;
  // One GetJob call.
  grpc::Status ReadJob(const std::string& job_id, v1::Job* job) const;
  // One GetJobLogs call.
  grpc::Status ReadLogs(const v1::GetJobLogsRequest& request,
                        v1::GetJobLogsResponse* response) const;
  int Fail(const grpc::Status& status) const;
  // Streams a local model file to the coordinator (the same bytes are kept
  // once); NOT_FOUND / DATA_LOSS naming the file, or the upload's error.
  absl::StatusOr<v1::ModelFileMeta> UploadModelFile(const std::string& path);

  std::shared_ptr<v1::JobService::StubInterface> stub_;
  const CliOptions options_;
  std::ostream& out_;
  std::ostream& err_;
};

// Creates a stub for "host:port" (TLS when `tls` is enabled); a non-empty
// `token` goes with every call as the user token (see
// coordinator/server/auth.h).
std::shared_ptr<v1::JobService::StubInterface> MakeJobStub(
    const std::string& address, const std::string& token = "",
    const ClientTls& tls = {});

}  // namespace gradsync::cli
