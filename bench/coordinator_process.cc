#include "bench/coordinator_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace gradsync::bench {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The "<name>: <n> kB" line of /proc/<pid>/status, in bytes (0 if absent).
int64_t StatusKb(const std::string& status, absl::string_view name) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, name) || !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    absl::ConsumeSuffix(&line, " kB");
    int64_t kb = 0;
    if (absl::SimpleAtoi(line, &kb)) return kb * 1024;
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::Start(
    const std::string& binary, const std::vector<std::string>& args) {
  const std::string log =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("gradsync_bench_coordinator_", getpid(), "_",
                    absl::ToUnixNanos(absl::Now()), ".log"))
          .string();
  std::vector<std::string> argv_text = {binary, "--listen", "127.0.0.1:0"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, binary.c_str(), &actions, nullptr,
                              argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", binary, ": ", strerror(err)));
  }
  std::unique_ptr<CoordinatorProcess> process(new CoordinatorProcess(pid, log));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    const std::string text = ReadFile(log);
    const size_t at = text.find("listening on port ");
    int port = 0;
    if (at != std::string::npos &&
        std::sscanf(text.c_str() + at, "listening on port %d", &port) == 1) {
      process->address_ = absl::StrCat("127.0.0.1:", port);
      return process;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return absl::FailedPreconditionError(
          absl::StrCat(binary, " exited before listening:\n", text));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(binary, " printed no port within 30 s:\n", ReadFile(log)));
}

CoordinatorProcess::~CoordinatorProcess() {
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::filesystem::remove(log_);
}

absl::StatusOr<ProcessUse> CoordinatorProcess::Use() const {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid_, "/stat"));
  // Fields after the parenthesised command name, which may hold spaces.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("no /proc/", pid_, "/stat"));
  }
  std::vector<std::string> f =
      absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state): utime is field 14, stime 15, num_threads 20.
  int64_t utime = 0, stime = 0, threads = 0;
  if (f.size() < 18 || !absl::SimpleAtoi(f[11], &utime) ||
      !absl::SimpleAtoi(f[12], &stime) || !absl::SimpleAtoi(f[17], &threads)) {
    return absl::InternalError(
        absl::StrCat("cannot parse /proc/", pid_, "/stat: ", stat));
  }
  const std::string status = ReadFile(absl::StrCat("/proc/", pid_, "/status"));
  ProcessUse use;
  use.cpu_seconds = static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  use.threads = static_cast<int>(threads);
  use.rss_bytes = StatusKb(status, "VmRSS");
  use.peak_rss_bytes = StatusKb(status, "VmHWM");
  return use;
}

std::string CoordinatorBesideSelf() {
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "gradsync-coordinator").string();
}

}  // namespace gradsync::bench
