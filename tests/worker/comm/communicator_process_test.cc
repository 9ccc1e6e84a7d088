// The gloo communicator with W ranks as real processes (tests/tools/
// comm_rank), bootstrapped through a FileStore; and a rank killed mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

// Runs `world` comm_rank processes; returns their exit statuses (waitpid
// status words). Kills them all after `deadline_s`.
std::vector<int> RunProcesses(int world, const std::string& mode,
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

class ProcessTest : public ::testing::TestWithParam<int> {};

TEST_P(ProcessTest, AllCollectivesAcrossProcesses) {
  const int world = GetParam();
  std::vector<int> status = RunProcesses(world, "ok", 240);
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " status " << status[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, ProcessTest, ::testing::Values(1, 2, 3, 4));

TEST(ProcessKillTest, SurvivorsNameTheKilledRank) {
  std::vector<int> status = RunProcesses(3, "die", 60);
  EXPECT_TRUE(WIFSIGNALED(status[2]) && WTERMSIG(status[2]) == SIGKILL);
  for (int r : {0, 1}) {
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " status " << status[r];
  }
}

}  // namespace
