// Dataset paths confined to the coordinator's data roots: the check itself
// (escapes through "..", symlinks and look-alike prefixes) and SubmitJob.
#include "coordinator/control/data_roots.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/control/coordinator.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

TEST(DataRootsTest, PathsUnderARootPassOthersAreDenied) {
  const std::string base = UniqueTempDir("roots");
  const std::string root = base + "/data";
  fs::create_directories(root + "/set/train");
  fs::create_directories(base + "/data2/set");
  fs::create_directories(base + "/secret");
  fs::create_symlink(base + "/secret", root + "/link-out");
  const std::vector<std::string> roots = {root};

  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", root + "/set", roots).ok());
  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", root, roots).ok());
  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", root + "/", roots).ok());
  EXPECT_TRUE(
      CheckUnderDataRoots("dataset.path", root + "/set/../set", roots).ok());
  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", root + "/not-yet", roots)
                  .ok());  // missing paths are SubmitJob's NOT_FOUND
  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", "/anything", {}).ok());

  for (const std::string& escape :
       {root + "/../secret", root + "/set/../../secret", base + "/data2/set",
        root + "/link-out", root + "/link-out/x", std::string("/etc")}) {
    absl::Status s = CheckUnderDataRoots("dataset.path", escape, roots);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << escape;
    EXPECT_NE(s.message().find("dataset.path " + escape), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("outside the coordinator's data roots"),
              std::string::npos)
        << s.message();
  }
  // A second root admits its own paths.
  EXPECT_TRUE(CheckUnderDataRoots("dataset.path", base + "/data2/set",
                                  {root, base + "/data2"})
                  .ok());
}

TEST(DataRootsTest, SubmitJobRefusesADatasetOutsideTheRoots) {
  const std::string base = UniqueTempDir("roots_submit");
  MakeImageFolder(base + "/data/set", 2, 1);
  MakeImageFolder(base + "/elsewhere", 2, 1);
  CoordinatorOptions o;
  o.run_failure_detector = false;
  o.data_roots = {base + "/data"};
  auto coordinator = Coordinator::Create(o, nullptr);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();

  v1::JobSpec spec;
  spec.set_model("fashion_cnn");
  spec.set_batch_size(2);
  spec.mutable_world_size()->set_max_workers(1);
  spec.mutable_dataset()->set_path(base + "/data/../elsewhere");
  absl::StatusOr<v1::Job> denied = (*coordinator)->SubmitJob(spec);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);

  spec.mutable_dataset()->set_path(base + "/data/set");
  absl::StatusOr<v1::Job> ok = (*coordinator)->SubmitJob(spec);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->train_samples(), 4);
}

}  // namespace
}  // namespace gradsync::testing
