#include "coordinator/server/listen_policy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/wire/secrets.h"
#include "foundation/files/durable_file.h"

namespace gradsync {
namespace {

absl::StatusOr<std::string> RandomToken() {
  unsigned char bytes[32];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
    return absl::InternalError("cannot read /dev/urandom for a token");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace

absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path,
                                              bool* created) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) return LoadToken("", path, path);
  absl::StatusOr<std::string> token = RandomToken();
  if (!token.ok()) return token.status();
  if (absl::Status s = WriteNewFile(path, *token + "\n", 0600,
                                    /*replace=*/false);
      !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create token file ", path, ": ", s.message()));
  }
  *created = true;
  return token;
}

absl::Status ShareToken(const std::string& path, const std::string& token) {
  if (token.empty()) {
    return absl::FailedPreconditionError(
        "there is no worker token to share (set tokens or --token-dir)");
  }
  if (absl::Status s = ReplaceFileDurably(path, token + "\n", 0600); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", path, ": ", s.message()));
  }
  return absl::OkStatus();
}

bool SplitHostPort(const std::string& address, std::string* host,
                   std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  return true;
}

std::string LoopbackOf(const std::string& address) {
  std::string host, port;
  SplitHostPort(address, &host, &port);
  return absl::StrCat(absl::StartsWith(host, "[") ? "[::1]" : "127.0.0.1", ":",
                      port);
}

bool IsLoopbackHost(const std::string& host) {
  absl::string_view name = host;
  if (absl::StartsWith(name, "[")) {
    return name == "[::1]" || absl::StartsWith(name, "[::1]:");
  }
  name = name.substr(0, name.find(':'));
  if (name == "localhost") return true;
  // 127.0.0.0/8, as four decimal numbers: not a name that starts so.
  std::vector<absl::string_view> parts = absl::StrSplit(name, '.');
  if (parts.size() != 4 || parts[0] != "127") return false;
  for (absl::string_view part : parts) {
    int n = 0;
    if (part.empty() || part.size() > 3 ||
        !std::all_of(part.begin(), part.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(part, &n) || n > 255) {
      return false;
    }
  }
  return true;
}

bool IsLoopbackAddress(const std::string& address) {
  std::string host, port;
  return SplitHostPort(address, &host, &port) && IsLoopbackHost(host);
}

absl::StatusOr<ListenPlan> PlanListen(const std::string& address,
                                      const std::string& user_token,
                                      const std::string& worker_token,
                                      const std::string& token_dir,
                                      bool insecure_anywhere) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", address, " has no port (host:port)"));
  }
  ListenPlan plan{address, user_token, worker_token, ""};
  if (user_token.empty() != worker_token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "only the ", user_token.empty() ? "worker" : "user",
        " token is set: set both --user-token and --worker-token (an open "
        "WorkerService lets anyone register, win rank 0 and upload "
        "snapshots), or neither"));
  }
  if (user_token.empty() && !token_dir.empty()) {
    if (::mkdir(token_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create token directory ", token_dir, ": ",
                       std::strerror(errno)));
    }
    bool created = false;
    for (auto [name, out] : {std::pair{"/user-token", &plan.user_token},
                             std::pair{"/worker-token", &plan.worker_token}}) {
      absl::StatusOr<std::string> token =
          LoadOrCreateToken(token_dir + name, &created);
      if (!token.ok()) return token.status();
      *out = *token;
    }
    plan.note =
        absl::StrCat("tokens from ", token_dir, "/user-token and ", token_dir,
                     "/worker-token", created ? " (created)" : "");
  }
  if (!plan.user_token.empty() && plan.user_token == plan.worker_token) {
    return absl::InvalidArgumentError("the user and worker tokens must differ");
  }
  if (plan.user_token.empty() && !IsLoopbackAddress(address)) {
    if (insecure_anywhere) {
      plan.note = absl::StrCat(
          "WARNING: no tokens and listening on ", address,
          " (--insecure-listen-anywhere): anyone who reaches this port can "
          "submit jobs and act as a worker");
    } else {
      plan.address = LoopbackOf(address);
      plan.note = absl::StrCat(
          "no tokens set: listening on ", plan.address, " only, not ", address,
          " (set --user-token and --worker-token, or --token-dir; "
          "--insecure-listen-anywhere to serve openly)");
    }
  }
  return plan;
}

}  // namespace gradsync
