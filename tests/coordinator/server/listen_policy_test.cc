// Finding: a coordinator given only --user-token started and served
// WorkerService openly, and with no tokens it listened on 0.0.0.0. Now one
// token alone is refused, no tokens narrow the address to loopback unless
// told otherwise, and --token-dir creates both tokens.
#include "coordinator/server/listen_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

TEST(ListenPolicyTest, OneTokenAloneIsRefused) {
  for (auto [user, worker] : {std::pair{"u", ""}, std::pair{"", "w"}}) {
    absl::StatusOr<ListenPlan> plan =
        PlanListen("0.0.0.0:50051", user, worker, "", false);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(plan.status().message().find("set both --user-token and "
                                           "--worker-token"),
              std::string::npos)
        << plan.status();
  }
  EXPECT_EQ(PlanListen("0.0.0.0:1", "same", "same", "", false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanListen("0.0.0.0", "", "", "", false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ListenPolicyTest, NoTokensMeansLoopbackUnlessInsecure) {
  absl::StatusOr<ListenPlan> plan =
      PlanListen("0.0.0.0:50051", "", "", "", false);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->address, "127.0.0.1:50051");
  EXPECT_NE(plan->note.find("--insecure-listen-anywhere"), std::string::npos)
      << plan->note;
  plan = PlanListen("[::]:7", "", "", "", false);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->address, "[::1]:7");
  for (const char* loopback : {"127.0.0.1:0", "localhost:9", "[::1]:9"}) {
    plan = PlanListen(loopback, "", "", "", false);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->address, loopback);
    EXPECT_EQ(plan->note, "");
  }
  // A name that merely starts like 127.0.0.0/8 may resolve anywhere.
  plan = PlanListen("127.0.0.1.example.com:9", "", "", "", false);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->address, "127.0.0.1:9");
  EXPECT_NE(plan->note, "");
  EXPECT_FALSE(IsLoopbackAddress("127.example.com:9"));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1"));  // no port
  plan = PlanListen("0.0.0.0:50051", "", "", "", true);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->address, "0.0.0.0:50051");
  EXPECT_NE(plan->note.find("WARNING"), std::string::npos);
  plan = PlanListen("0.0.0.0:50051", "u", "w", "", false);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->address, "0.0.0.0:50051");
  EXPECT_EQ(plan->user_token, "u");
}

TEST(ListenPolicyTest, TokenDirCreatesThenReusesPrivateTokens) {
  const std::string dir = UniqueTempDir("tokens") + "/tokens";
  absl::StatusOr<ListenPlan> first =
      PlanListen("0.0.0.0:1", "", "", dir, false);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->address, "0.0.0.0:1");  // tokens: no narrowing
  EXPECT_EQ(first->user_token.size(), 64u);
  EXPECT_NE(first->user_token, first->worker_token);
  EXPECT_NE(first->note.find("(created)"), std::string::npos) << first->note;
  EXPECT_EQ(first->note.find(first->user_token), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat((dir + "/worker-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  absl::StatusOr<ListenPlan> again =
      PlanListen("0.0.0.0:1", "", "", dir, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->user_token, first->user_token);
  EXPECT_EQ(again->worker_token, first->worker_token);
  // Given tokens win over the directory.
  absl::StatusOr<ListenPlan> given =
      PlanListen("0.0.0.0:1", "u", "w", dir, false);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->user_token, "u");
  // A link planted where a token would be created is not followed.
  const std::string other = UniqueTempDir("tokens_link");
  fs::create_directories(other + "/tokens");
  fs::create_symlink("/nonexistent-target", other + "/tokens/user-token");
  EXPECT_FALSE(PlanListen("0.0.0.0:1", "", "", other + "/tokens", false).ok());
}

// Compose mounts only the worker token into workers: the coordinator
// writes a copy of it alone (finding 13: workers saw the user token).
TEST(ListenPolicyTest, ShareTokenWritesThatTokenAlone) {
  const std::string dir = UniqueTempDir("shared");
  ASSERT_TRUE(ShareToken(dir + "/worker-token", "worker-secret").ok());
  std::ifstream in(dir + "/worker-token");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "worker-secret");
  struct stat st;
  ASSERT_EQ(::stat((dir + "/worker-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A new token replaces the old one; a planted link is replaced, not
  // followed.
  ASSERT_TRUE(ShareToken(dir + "/worker-token", "rotated-secret").ok());
  fs::create_symlink(dir + "/elsewhere", dir + "/link");
  ASSERT_TRUE(ShareToken(dir + "/link", "worker-secret").ok());
  EXPECT_FALSE(fs::exists(dir + "/elsewhere"));
  EXPECT_FALSE(fs::is_symlink(dir + "/link"));
  EXPECT_EQ(ShareToken(dir + "/worker-token", "").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ShareToken(dir + "/missing/worker-token", "w").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ListenPolicyTest, IsLoopbackHostNamesOnlyLoopback) {
  for (const char* host : {"localhost", "localhost:80", "127.0.0.1",
                           "127.255.0.9:9464", "[::1]", "[::1]:1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host :
       {"", "example.com", "127.0.0.1.example.com", "127.0.0", "128.0.0.1",
        "[::1].x", "localhostx", "0x7f.0.0.1", "127.0.0.1 "}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace gradsync::testing
