// The worker's container health check: fresh, stale and missing health
// files (CheckWorkerHealth). A real agent writing one: agent_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "worker/agent/health_file.h"

namespace gradsync {
namespace {

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          absl::StrCat("gradsync-health-", getpid(), "-", name))
      .string();
}

TEST(WorkerHealthTest, FreshStaleAndMissing) {
  const std::string file = TempFile("h");
  std::ofstream(file) << absl::ToUnixMillis(absl::Now()) << " w3-abcd idle\n";
  absl::StatusOr<std::string> ok = CheckWorkerHealth(file, absl::Seconds(15));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(ok->find("worker w3-abcd (idle)"), std::string::npos) << *ok;

  std::ofstream(file) << absl::ToUnixMillis(absl::Now() - absl::Seconds(60))
                      << " w3-abcd running\n";
  absl::StatusOr<std::string> stale =
      CheckWorkerHealth(file, absl::Seconds(15));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(stale.status().message().find("more than 15s"), std::string::npos)
      << stale.status();

  std::filesystem::remove(file);
  EXPECT_EQ(CheckWorkerHealth(file, absl::Seconds(15)).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gradsync
