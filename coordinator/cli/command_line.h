// CommandLine: the `gradsync` command line (CLI11): global flags, the
// subcommands and their flags, `--help` with examples, and the bash
// completion script generated from the same definitions (`gradsync
// completion bash`). Global flags (--coordinator/-c, --json, --timeout,
// tokens, TLS) are accepted before or after the subcommand, as kubectl
// takes them: `gradsync status JOB --json -c host:port`.
//
// Thread-compatible. Not copyable (CLI11 keeps pointers into it).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "coordinator/cli/commands.h"
#include "coordinator/cli/job_flags.h"
#include "coordinator/client/tls_flags.h"
#include "coordinator/client/token_flags.h"

namespace gradsync::cli {

class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Parses `argv`. nullopt: go on and run command(); otherwise the exit
  // code, after CLI11 printed the help, the version or the usage error to
  // `out` / `err`.
  std::optional<int> Parse(int argc, const char* const* argv, std::ostream& out,
                           std::ostream& err);

  // The subcommand parsed, its path joined by spaces ("status",
  // "model pull", "completion").
  std::string command() const;

  // A bash completion script: subcommands, then each one's flags and the
  // global flags, the values of choice flags (--model ...) and, where a
  // command takes a job, the coordinator's job ids (`source <(gradsync
  // completion bash)`).
  std::string BashCompletion() const;
  // The same for zsh, through its bash completion layer (bashcompinit):
  // `source <(gradsync completion zsh)`.
  std::string ZshCompletion() const;

  // What was parsed.
  std::string coordinator = "localhost:50051";
  CliOptions options;
  JobFlags job;
  bool watch_after_submit = false;
  bool quiet_submit = false;
  bool quiet_list = false;
  std::string job_id;
  std::string reason;  // cancel --reason
  int limit = 0;       // list --limit
  int64_t model_step = -1;
  bool model_step_given = false;
  std::string model_out;
  std::string model_file_sha256;  // model files delete SHA256
  bool model_state_dict = false;
  std::string model_format = "checkpoint";  // model pull --format
  std::string plot_out;                     // plot -o FILE
  std::optional<int> log_rank;              // logs --rank R
  bool follow = false;                      // logs -f
  int workers_wait = 0;                     // workers --wait N
  std::string shell;                        // completion SHELL

  const TokenFlags& token() const { return token_; }
  const ClientTlsFlags& tls() const { return tls_; }

 private:
  CLI::App app_;
  TokenFlags token_;    // after app_, which it registers its flags with
  ClientTlsFlags tls_;  // likewise
};

}  // namespace gradsync::cli
