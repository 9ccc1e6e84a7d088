#include "coordinator/client/token_flags.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {

TokenFlags::TokenFlags(CLI::App& app, const std::string& name,
                       const std::string& env, const std::string& help,
                       const std::string& role, const std::string& dir_file)
    : name_(name), dir_file_(dir_file) {
  app.add_option("--" + name, value_, help)->envname(env);
  app.add_option("--" + name + "-file", file_,
                 "file holding the " + role + " token")
      ->envname(env + "_FILE");
  if (!dir_file_.empty()) {
    app.add_option("--token-dir", dir_,
                   "with no token given: the " + role + " token is DIR/" +
                       dir_file_ + " (a coordinator's --token-dir)")
        ->envname("GRADSYNC_TOKEN_DIR");
  }
}

absl::StatusOr<std::string> TokenFlags::Load(absl::Duration wait) const {
  if (!value_.empty() || !file_.empty() || dir_.empty()) {
    return LoadToken(value_, file_, "--" + name_ + "/--" + name_ + "-file");
  }
  const std::string path = dir_ + "/" + dir_file_;
  const absl::Time deadline = absl::Now() + wait;
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    if (absl::Now() >= deadline) {
      return absl::NotFoundError(absl::StrCat(
          "no token given and ", path, " (--token-dir) ",
          wait > absl::ZeroDuration() ? absl::StrCat("did not appear within ",
                                                     absl::FormatDuration(wait))
                                      : "does not exist"));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return LoadToken("", path, path);
}

}  // namespace gradsync
