// The gloo communicator with W ranks as real processes (tests/tools/
// comm_rank), bootstrapped through a FileStore; and a rank killed mid-run.
// Each case runs twice: all-reduces through shared memory (the default for
// ranks on one host; the ranks check they got it) and over TCP
// (GRADSYNC_GLOO_SHM=0).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/fakes/shm_probe.h"

namespace {

using gradsync::CanShareMemory;

// Runs `world` comm_rank processes, all-reducing through shared memory or
// over TCP; returns their exit statuses (waitpid status words). Kills them
// all after `deadline_s`.
std::vector<int> RunProcesses(int world, const std::string& mode, bool shm,
                              int deadline_s) {
  static int run = 0;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("gradsync_comm_" + std::to_string(getpid()) + "_" +
                            std::to_string(run++)))
                              .string();
  std::filesystem::remove_all(dir);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("GRADSYNC_GLOO_SHM", shm ? "1" : "0", 1);
      // One rank has no peer to share memory with.
      setenv("GRADSYNC_EXPECT_SHM", shm && world > 1 ? "1" : "0", 1);
      execl(COMM_RANK_PATH, "comm_rank", dir.c_str(), std::to_string(r).c_str(),
            std::to_string(world).c_str(), mode.c_str(), nullptr);
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> status(world, -1);
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  int left = world;
  while (left > 0) {
    for (int r = 0; r < world; ++r) {
      if (status[r] != -1) continue;
      int s = 0;
      if (waitpid(pids[r], &s, WNOHANG) == pids[r]) {
        status[r] = s;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > end) {
      for (int r = 0; r < world; ++r) {
        if (status[r] == -1) kill(pids[r], SIGKILL);
      }
      ADD_FAILURE() << "ranks still running after " << deadline_s << " s";
      for (int r = 0; r < world; ++r) {
        if (status[r] == -1) waitpid(pids[r], &status[r], 0);
      }
      break;
    }
    // Child processes have no completion callback to block on; poll.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::filesystem::remove_all(dir);
  return status;
}

// The transport a test's ranks all-reduce over: shared memory or TCP.
class Transport : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (shm() && !CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }
  bool shm() const { return GetParam(); }
};

std::string TransportName(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "SharedMemory" : "Tcp";
}

class ProcessTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  void SetUp() override {
    if (std::get<1>(GetParam()) && !CanShareMemory()) {
      GTEST_SKIP() << "this machine cannot create POSIX shared memory";
    }
  }
};

TEST_P(ProcessTest, AllCollectivesAcrossProcesses) {
  const auto [world, shm] = GetParam();
  std::vector<int> status = RunProcesses(world, "ok", shm, 240);
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " status " << status[r];
  }
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ProcessTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
      return std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "SharedMemory" : "Tcp");
    });

class ProcessKillTest : public Transport {};

TEST_P(ProcessKillTest, SurvivorsNameTheKilledRank) {
  std::vector<int> status = RunProcesses(3, "die", shm(), 60);
  EXPECT_TRUE(WIFSIGNALED(status[2]) && WTERMSIG(status[2]) == SIGKILL);
  for (int r : {0, 1}) {
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " status " << status[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ProcessKillTest, ::testing::Bool(),
                         TransportName);

}  // namespace
