// A token given on the command line: the option pair --NAME and --NAME-file,
// also read from the environment variables ENV and ENV_FILE, loaded with
// LoadToken (coordinator/wire/secrets.h) after parsing. The coordinator, the
// CLI and the worker declare their tokens this way. Not copyable or movable:
// the app keeps pointers into it. Thread-compatible.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

class TokenFlags {
 public:
  // `help` describes --NAME; `role` names the token in --NAME-file's help.
  TokenFlags(CLI::App& app, const std::string& name, const std::string& env,
             const std::string& help, const std::string& role);
  TokenFlags(const TokenFlags&) = delete;
  TokenFlags& operator=(const TokenFlags&) = delete;

  // The token after parsing ("" when neither is given); errors as LoadToken.
  absl::StatusOr<std::string> Load() const;

 private:
  const std::string name_;
  std::string value_, file_;
};

}  // namespace gradsync
