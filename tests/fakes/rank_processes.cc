#include "tests/fakes/rank_processes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "foundation/store/file_store.h"
#include "worker/comm/create_communicator.h"

extern char** environ;

namespace gradsync {
namespace {

// "CALL RANK WORLD STORE_DIR": this process is one rank of the CALL-th
// process group of its test.
constexpr char kRoleVar[] = "GRADSYNC_RANK_PROCESS";
constexpr absl::Duration kLimit = absl::Seconds(100);

struct Role {
  int call = 0;
  int rank = 0;
  int world = 0;
  std::string dir;
};

const std::optional<Role>& ThisRole() {
  static const std::optional<Role> role = []() -> std::optional<Role> {
    const char* v = std::getenv(kRoleVar);
    if (v == nullptr) return std::nullopt;
    std::vector<std::string> f = absl::StrSplit(v, absl::MaxSplits(' ', 3));
    Role r;
    if (f.size() != 4 || !absl::SimpleAtoi(f[0], &r.call) ||
        !absl::SimpleAtoi(f[1], &r.rank) || !absl::SimpleAtoi(f[2], &r.world)) {
      std::fprintf(stderr, "%s=%s: expected CALL RANK WORLD DIR\n", kRoleVar,
                   v);
      std::_Exit(2);
    }
    r.dir = f[3];
    return r;
  }();
  return role;
}

std::string CurrentTestName() {
  const ::testing::TestInfo* t =
      ::testing::UnitTest::GetInstance()->current_test_info();
  return t == nullptr ? "" : absl::StrCat(t->test_suite_name(), ".", t->name());
}

// The index of this process group among those the running test has made;
// the same in the parent and in its children, which run the same code.
int NextCall() {
  static std::string test;
  static int next = 0;
  if (const std::string now = CurrentTestName(); now != test) {
    test = now;
    next = 0;
  }
  return next++;
}

int GpuCount() {
  static const int n = torch::cuda::is_available()
                           ? static_cast<int>(torch::cuda::device_count())
                           : 0;
  return n;
}

// In a child: runs body for this rank and ends the process.
[[noreturn]] void RunThisRank(
    Backend backend, const Role& role, absl::Duration timeout,
    const std::function<void(int, Communicator&)>& body) {
  {
    CommOptions o;
    o.rank = role.rank;
    o.size = role.world;
    o.store = std::make_shared<FileStore>(role.dir);
    o.timeout = timeout;
    o.cuda_device = RankGpu(role.rank);
    auto comm = CreateCommunicator(backend, o);
    if (!comm.ok()) {
      ADD_FAILURE() << "rank " << role.rank << ": " << comm.status();
    } else {
      EXPECT_EQ((*comm)->backend(), backend);
      body(role.rank, **comm);
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}

// The environment of rank `rank`'s process: this one's, without gtest's
// output and sharding settings, with its role, and with a host of its own
// for NCCL where ranks share GPUs.
std::vector<std::string> ChildEnvironment(const std::string& role, int rank,
                                          bool own_host) {
  std::vector<std::string> env;
  bool has_ifname = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == kRoleVar || name == "GTEST_OUTPUT" ||
        name == "GTEST_SHARD_INDEX" || name == "GTEST_TOTAL_SHARDS" ||
        (own_host && name == "NCCL_HOSTID")) {
      continue;
    }
    has_ifname = has_ifname || name == "NCCL_SOCKET_IFNAME";
    env.push_back(kv);
  }
  env.push_back(absl::StrCat(kRoleVar, "=", role));
  if (own_host) {
    env.push_back(absl::StrCat("NCCL_HOSTID=gradsync-test-rank-", rank));
    if (!has_ifname) env.push_back("NCCL_SOCKET_IFNAME=lo");
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Starts this test binary as rank `rank`, its output going to `log`.
pid_t Spawn(const std::string& role, int rank, bool own_host,
            const std::string& log) {
  std::vector<std::string> args = {
      "rank_process", absl::StrCat("--gtest_filter=", CurrentTestName())};
  std::vector<std::string> env = ChildEnvironment(role, rank, own_host);
  std::vector<char*> argv = Pointers(args), envp = Pointers(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr,
                              argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    ADD_FAILURE() << "cannot start rank " << rank << ": " << strerror(err);
    return -1;
  }
  return pid;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What happened to one rank's process.
struct Outcome {
  pid_t pid = -1;
  int status = 0;
  bool ended = false;
  bool stopped = false;
};

// Waits for every rank to end (a rank expected to stop: to stop), up to
// kLimit; then kills whatever is left (the stopped ranks among them).
void Await(std::vector<Outcome>& ranks, const std::map<int, int>& signalled) {
  const absl::Time end = absl::Now() + kLimit;
  auto done = [&](int r) {
    const auto it = signalled.find(r);
    return ranks[r].ended ||
           (it != signalled.end() && it->second == SIGSTOP && ranks[r].stopped);
  };
  for (;;) {
    bool all = true;
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
      Outcome& o = ranks[r];
      if (!o.ended && o.pid > 0) {
        int s = 0;
        if (waitpid(o.pid, &s, WNOHANG | WUNTRACED) == o.pid) {
          o.stopped = o.stopped || WIFSTOPPED(s);
          if (!WIFSTOPPED(s)) {
            o.ended = true;
            o.status = s;
          }
        }
      }
      all = all && (o.pid <= 0 || done(r));
    }
    if (all) break;
    if (absl::Now() > end) {
      ADD_FAILURE() << "ranks still running after " << kLimit;
      break;
    }
    // Child processes have no completion callback to block on; poll.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (Outcome& o : ranks) {
    if (o.pid <= 0 || o.ended) continue;
    kill(o.pid, SIGKILL);
    waitpid(o.pid, &o.status, 0);
  }
}

// Fails the test when rank `r` did not end as expected.
void Check(int r, const Outcome& o, const std::map<int, int>& signalled,
           const std::string& log) {
  const auto it = signalled.find(r);
  bool ok = false;
  std::string expected = "exit 0";
  if (it == signalled.end()) {
    ok = o.ended && WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0;
  } else if (it->second == SIGSTOP) {
    expected = "a stop";
    ok = o.stopped && !o.ended;
  } else {
    expected = absl::StrCat("signal ", it->second);
    ok = o.ended && WIFSIGNALED(o.status) && WTERMSIG(o.status) == it->second;
  }
  if (ok) return;
  std::string got = "no process";
  if (o.pid > 0 && !o.ended) got = "still running (killed)";
  if (o.ended && WIFEXITED(o.status)) {
    got = absl::StrCat("exit ", WEXITSTATUS(o.status));
  }
  if (o.ended && WIFSIGNALED(o.status)) {
    got = absl::StrCat("signal ", WTERMSIG(o.status));
  }
  ADD_FAILURE() << "rank " << r << " process: expected " << expected << ", got "
                << got << "; its output:\n"
                << ReadFile(log);
}

}  // namespace

void RunRankProcesses(Backend backend, int world, absl::Duration timeout,
                      const std::function<void(int, Communicator&)>& body,
                      const std::map<int, int>& signalled) {
  const int call = NextCall();
  if (const std::optional<Role>& role = ThisRole()) {
    if (role->call == call) RunThisRank(backend, *role, timeout, body);
    return;  // another group of this test: the parent runs it separately
  }
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("gradsync_ranks_", getpid(), "_", call,
                                        "_", absl::ToUnixMicros(absl::Now())))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/store");
  const bool own_hosts = backend == Backend::kNccl && GpuCount() < world;
  std::vector<Outcome> ranks(world);
  for (int r = 0; r < world; ++r) {
    ranks[r].pid =
        Spawn(absl::StrCat(call, " ", r, " ", world, " ", dir, "/store"), r,
              own_hosts, absl::StrCat(dir, "/rank", r, ".log"));
  }
  Await(ranks, signalled);
  for (int r = 0; r < world; ++r) {
    Check(r, ranks[r], signalled, absl::StrCat(dir, "/rank", r, ".log"));
  }
  std::filesystem::remove_all(dir);
}

bool RanksRunAsProcesses(Backend backend, int world) {
  const char* forced = std::getenv("GRADSYNC_TEST_RANK_PROCESSES");
  if (forced != nullptr && std::string(forced) == "1") return true;
  return backend == Backend::kNccl && GpuCount() > 0 && GpuCount() < world;
}

int RankGpu(int rank) { return GpuCount() > 0 ? rank % GpuCount() : rank; }

}  // namespace gradsync
