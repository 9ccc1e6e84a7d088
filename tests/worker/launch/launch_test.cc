// gradsync-launch as a user runs it: N local ranks with no coordinator
// train on a synthetic data set; a bad argument fails every rank with the
// reason; a rank killed mid-run stops the others, and the launcher names it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct LaunchRun {
  int status = -1;     // waitpid's status word
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The launcher's child with RANK=`rank`, or -1 while there is none.
pid_t RankPid(pid_t launcher, int rank) {
  std::istringstream children(
      ReadFile(fs::path("/proc") / std::to_string(launcher) / "task" /
               std::to_string(launcher) / "children"));
  const std::string want = "RANK=" + std::to_string(rank);
  for (pid_t pid; children >> pid;) {
    std::string env =
        ReadFile(fs::path("/proc") / std::to_string(pid) / "environ");
    std::replace(env.begin(), env.end(), '\0', '\n');
    std::istringstream lines(env);
    for (std::string line; std::getline(lines, line);) {
      if (line == want) return pid;
    }
  }
  return -1;
}

// Runs gradsync-launch with `args`; kills it after `deadline_s`. With
// `kill_rank` >= 0, SIGKILLs that rank once rank 0 has logged a step.
LaunchRun Launch(const std::vector<std::string>& args, int deadline_s,
                 int kill_rank = -1) {
  static int n = 0;
  const fs::path log = fs::temp_directory_path() /
                       ("gradsync_launch_" + std::to_string(getpid()) + "_" +
                        std::to_string(n++) + ".log");
  std::vector<std::string> argv = {"gradsync-launch"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out == nullptr) _exit(126);
    dup2(fileno(stdout), fileno(stderr));
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    execv(LAUNCH_PATH, raw.data());
    _exit(127);
  }
  LaunchRun run;
  bool killed = false;
  while (true) {
    if (waitpid(pid, &run.status, WNOHANG) == pid) break;
    if (kill_rank >= 0 && !killed &&
        ReadFile(log).find("[rank 0] epoch 1 step") != std::string::npos) {
      const pid_t victim = RankPid(pid, kill_rank);
      if (victim > 0) killed = kill(victim, SIGKILL) == 0;
    }
    if (Clock::now() - start > std::chrono::seconds(deadline_s)) {
      kill(pid, SIGKILL);
      waitpid(pid, &run.status, 0);
      ADD_FAILURE() << "gradsync-launch still running after " << deadline_s
                    << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.output = ReadFile(log);
  fs::remove(log);
  if (kill_rank >= 0) {
    EXPECT_TRUE(killed) << "rank " << kill_rank;
  }
  return run;
}

bool ExitedWith(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

TEST(LaunchTest, TwoRanksTrainWithoutACoordinator) {
  LaunchRun run = Launch({"--nproc-per-node",
                          "2",
                          "--backend",
                          "gloo",
                          "--dataset",
                          "synthetic:tiny",
                          "--eval-split",
                          "test",
                          "--model",
                          "mlp",
                          "--epochs",
                          "2",
                          "--batch-size",
                          "16",
                          "--lr",
                          "0.01",
                          "--log-every",
                          "8",
                          "--loader-threads",
                          "1"},
                         240);
  ASSERT_TRUE(ExitedWith(run.status, 0)) << run.output;
  EXPECT_NE(run.output.find("2 rank(s), backend gloo"), std::string::npos)
      << run.output;
  // 512 samples / 2 ranks / batch 16 = 16 steps per epoch.
  EXPECT_NE(run.output.find("[rank 0] epoch 2 step 16/16"), std::string::npos)
      << run.output;
  std::smatch m;
  const std::regex accuracy(
      R"(\[rank 0\] epoch 2: test accuracy ([0-9.]+)% \(128 samples\))");
  ASSERT_TRUE(std::regex_search(run.output, m, accuracy)) << run.output;
  // Four learnable classes: far above chance (25%).
  EXPECT_GT(std::stod(m[1]), 80) << run.output;
  EXPECT_NE(run.output.find("2 rank(s) finished"), std::string::npos);
}

TEST(LaunchTest, ABadDataSetFailsWithTheReason) {
  LaunchRun run =
      Launch({"--nproc-per-node", "2", "--backend", "gloo", "--dataset",
              "synthetic:nope", "--model", "mlp", "--batch-size", "4"},
             120);
  EXPECT_TRUE(ExitedWith(run.status, 1)) << run.output;
  EXPECT_NE(run.output.find("unknown synthetic data set 'synthetic:nope'"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("failed with exit code 1"), std::string::npos)
      << run.output;
}

TEST(LaunchTest, AKilledRankStopsTheRunAndIsNamed) {
  // Long enough that rank 1 dies mid-training; collectives time out at 5 s,
  // but the launcher stops the survivors first.
  LaunchRun run =
      Launch({"--nproc-per-node", "3", "--backend", "gloo", "--dataset",
              "synthetic:cifar10", "--model", "mlp", "--batch-size", "8",
              "--log-every", "1", "--timeout", "5", "--loader-threads", "1"},
             120, /*kill_rank=*/1);
  EXPECT_TRUE(ExitedWith(run.status, 1)) << run.output;
  EXPECT_NE(run.output.find("rank 1 failed with signal 9"), std::string::npos)
      << run.output;
  // Stopped within the collective deadline plus the launcher's grace.
  EXPECT_LT(run.seconds, 60) << run.output;
}

TEST(LaunchTest, EveryRankWritesItsProfileOfTheStepsAsked) {
  const fs::path dir = fs::temp_directory_path() /
                       ("gradsync_profile_" + std::to_string(getpid()));
  fs::remove_all(dir);
  LaunchRun run =
      Launch({"--nproc-per-node", "2", "--backend", "gloo", "--dataset",
              "synthetic:tiny", "--model", "mlp", "--batch-size", "16",
              "--loader-threads", "1", "--profile-steps", "2:3",
              "--profile-dir", dir.string()},
             240);
  ASSERT_TRUE(ExitedWith(run.status, 0)) << run.output;
  for (int rank : {0, 1}) {
    const std::string table =
        ReadFile(dir / ("rank" + std::to_string(rank) + ".ops.tsv"));
    EXPECT_EQ(table.rfind("# steps 2-3 (2 steps) on cpu\n", 0), 0) << table;
    // The mlp's linear layers ran in the window.
    EXPECT_TRUE(std::regex_search(table, std::regex("\ncpu\t\\d+\t\\d+\t"
                                                    "aten::addmm\n")))
        << table;
  }
  fs::remove_all(dir);
}

TEST(LaunchTest, ABadProfileWindowIsRefused) {
  LaunchRun run = Launch({"--dataset", "synthetic:tiny", "--model", "mlp",
                          "--batch-size", "4", "--profile-steps", "5:2"},
                         60);
  EXPECT_TRUE(ExitedWith(run.status, 2)) << run.output;
  EXPECT_NE(run.output.find("profile steps \"5:2\": expected A:B"),
            std::string::npos)
      << run.output;
}

}  // namespace
