// A token given on the command line: the option pair --NAME and --NAME-file,
// also read from the environment variables ENV and ENV_FILE, loaded with
// LoadToken (coordinator/wire/secrets.h) after parsing. The coordinator, the
// CLI and the worker declare their tokens this way. With a `dir_file`
// (the CLI's "user-token", the worker's "worker-token"), --token-dir /
// GRADSYNC_TOKEN_DIR names the directory where a coordinator started with
// --token-dir keeps its tokens: used when neither option is given. Not
// copyable or movable: the app keeps pointers into it. Thread-compatible.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

class TokenFlags {
 public:
  // `help` describes --NAME; `role` names the token in --NAME-file's help.
  TokenFlags(CLI::App& app, const std::string& name, const std::string& env,
             const std::string& help, const std::string& role,
             const std::string& dir_file = "");
  TokenFlags(const TokenFlags&) = delete;
  TokenFlags& operator=(const TokenFlags&) = delete;

  // The token after parsing ("" when none is given); errors as LoadToken.
  // From the token directory, waits up to `wait` for the file to appear (a
  // worker may start before the coordinator created it): NOT_FOUND after.
  absl::StatusOr<std::string> Load(
      absl::Duration wait = absl::ZeroDuration()) const;

 private:
  const std::string name_;
  const std::string dir_file_;
  std::string value_, file_, dir_;
};

}  // namespace gradsync
