#include "worker/launch/local_launcher.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace {

volatile sig_atomic_t g_interrupted = 0;

void OnSignal(int) { g_interrupted = 1; }

std::string Describe(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return "an unknown status";
}

}  // namespace

absl::Status LaunchLocalRanks(const LocalLaunch& launch) {
  if (launch.nproc < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nproc-per-node must be >= 1 (got ", launch.nproc, ")"));
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int, old_term;
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::vector<char*> args;
  for (const std::string& a : launch.argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::map<pid_t, int> running;  // pid -> rank
  absl::Status result;
  for (int r = 0; r < launch.nproc && result.ok(); ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      result = absl::InternalError(
          absl::StrCat("cannot start rank ", r, ": ", std::strerror(errno)));
      break;
    }
    if (pid == 0) {
      const std::string rank = std::to_string(r);
      const std::string world = std::to_string(launch.nproc);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", world.c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", world.c_str(), 1);
      for (const auto& [key, value] : launch.env) {
        setenv(key.c_str(), value.c_str(), 1);
      }
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      execv(launch.program.c_str(), args.data());
      _exit(127);
    }
    running[pid] = r;
  }
  absl::Time stop_deadline = absl::InfiniteFuture();
  auto stop_all = [&](int sig) {
    for (const auto& [pid, rank] : running) kill(pid, sig);
  };
  if (!result.ok()) {
    stop_all(SIGTERM);
    stop_deadline = absl::Now() + launch.grace;
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const int rank = it->second;
      running.erase(it);
      const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && result.ok()) {
        result = absl::InternalError(
            absl::StrCat("rank ", rank, " failed with ", Describe(status),
                         running.empty() ? "" : "; stopping the other ranks"));
        stop_all(SIGTERM);
        stop_deadline = absl::Now() + launch.grace;
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (g_interrupted && result.ok()) {
      result = absl::CancelledError("interrupted; stopping the ranks");
      stop_all(SIGTERM);
      stop_deadline = absl::Now() + launch.grace;
    }
    if (absl::Now() > stop_deadline) {
      stop_all(SIGKILL);
      stop_deadline = absl::InfiniteFuture();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return result;
}

}  // namespace gradsync
