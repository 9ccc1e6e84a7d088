#include "coordinator/client/token_flags.h"

#include "coordinator/wire/secrets.h"

namespace gradsync {

TokenFlags::TokenFlags(CLI::App& app, const std::string& name,
                       const std::string& env, const std::string& help,
                       const std::string& role)
    : name_(name) {
  app.add_option("--" + name, value_, help)->envname(env);
  app.add_option("--" + name + "-file", file_,
                 "file holding the " + role + " token")
      ->envname(env + "_FILE");
}

absl::StatusOr<std::string> TokenFlags::Load() const {
  return LoadToken(value_, file_, "--" + name_ + "/--" + name_ + "-file");
}

}  // namespace gradsync
