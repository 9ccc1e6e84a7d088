// Dataset paths confined to the coordinator's data roots: the check itself
// (escapes through "..", symlinks and look-alike prefixes) and SubmitJob
// (the path, the splits, and links and FIFOs inside the data set).
#include "foundation/data_index/data_roots.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "coordinator/control/coordinator.h"
#include "foundation/data_index/tar_member.h"
#include "foundation/files/confined_path.h"
#include "tests/fakes/fifo_reader.h"
#include "tests/fakes/tensor_files.h"
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

  EXPECT_TRUE(CheckUnderRoots("dataset.path", root + "/set", roots).ok());
  EXPECT_TRUE(CheckUnderRoots("dataset.path", root, roots).ok());
  EXPECT_TRUE(CheckUnderRoots("dataset.path", root + "/", roots).ok());
  EXPECT_TRUE(
      CheckUnderRoots("dataset.path", root + "/set/../set", roots).ok());
  EXPECT_TRUE(CheckUnderRoots("dataset.path", root + "/not-yet", roots)
                  .ok());  // missing paths are SubmitJob's NOT_FOUND
  EXPECT_TRUE(CheckUnderRoots("dataset.path", "/anything", {}).ok());

  for (const std::string& escape :
       {root + "/../secret", root + "/set/../../secret", base + "/data2/set",
        root + "/link-out", root + "/link-out/x", std::string("/etc")}) {
    absl::Status s = CheckUnderRoots("dataset.path", escape, roots);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << escape;
    EXPECT_NE(s.message().find("dataset.path " + escape), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("outside the data roots"), std::string::npos)
        << s.message();
  }
  // What a path resolves to is never told: /proc/self/fd/N would name the
  // server's own open files (its SQLite database).
  const std::string own = base + "/own-database.sqlite";
  std::ofstream(own) << "x";
  std::FILE* open_file = std::fopen(own.c_str(), "r");
  ASSERT_NE(open_file, nullptr);
  const std::string fd_path =
      "/proc/self/fd/" + std::to_string(fileno(open_file));
  absl::Status s = CheckUnderRoots("dataset.path", fd_path, roots);
  std::fclose(open_file);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find(fd_path), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("own-database"), std::string::npos) << s.message();
  // A second root admits its own paths.
  EXPECT_TRUE(CheckUnderRoots("dataset.path", base + "/data2/set",
                              {root, base + "/data2"})
                  .ok());
}

// A worker's checkpoint root: relative paths land under it, absolute ones
// must resolve into it (finding: checkpoint directories were created
// anywhere and resume_from read any file on rank 0's host).
TEST(DataRootsTest, CheckpointPathsStayUnderTheRoot) {
  const std::string root = UniqueTempDir("ckpt_root");
  const std::string name = "checkpoint root";
  EXPECT_EQ(*ResolveUnderRoot("f", "", root, name), "");
  EXPECT_EQ(*ResolveUnderRoot("f", "run1", root, name), root + "/run1");
  EXPECT_EQ(*ResolveUnderRoot("f", root + "/a/b", root, name), root + "/a/b");
  for (const std::string& out :
       {std::string("/etc/passwd"), std::string("../escape"),
        std::string("a/../../escape"), root + "/../x"}) {
    absl::StatusOr<std::string> r =
        ResolveUnderRoot("checkpoint.resume_from", out, root, name);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << out;
    EXPECT_NE(r.status().message().find("checkpoint.resume_from"),
              std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("outside the checkpoint root"),
              std::string::npos)
        << r.status();
  }
}

class SubmitUnderRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = UniqueTempDir("roots_splits");
    MakeImageFolder(base_ + "/data/set", 2, 1);
    MakeImageFolder(base_ + "/secret", 2, 1);
    CoordinatorOptions o;
    o.run_failure_detector = false;
    o.data_roots = {base_ + "/data"};
    auto coordinator = Coordinator::Create(o, nullptr);
    ASSERT_TRUE(coordinator.ok()) << coordinator.status();
    coordinator_ = std::move(*coordinator);
    spec_.set_model("fashion_cnn");
    spec_.set_batch_size(2);
    spec_.mutable_world_size()->set_max_workers(1);
    spec_.mutable_dataset()->set_path(base_ + "/data/set");
  }

  absl::Status Submit() { return coordinator_->SubmitJob(spec_).status(); }

  std::string base_;
  std::unique_ptr<Coordinator> coordinator_;
  v1::JobSpec spec_;
};

TEST_F(SubmitUnderRootsTest, ADatasetOutsideTheRootsIsRefused) {
  spec_.mutable_dataset()->set_path(base_ + "/data/../secret");
  EXPECT_EQ(Submit().code(), absl::StatusCode::kPermissionDenied);

  spec_.mutable_dataset()->set_path(base_ + "/data/set");
  absl::StatusOr<v1::Job> ok = coordinator_->SubmitJob(spec_);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->train_samples(), 4);
}

// Issue 39, finding 4: a submission's scan ends with its caller (a client
// that gave up) and with the coordinator (shutting down): CANCELLED naming
// the folder, no job made.
TEST_F(SubmitUnderRootsTest, AScanEndsWithItsCallerAndWithTheCoordinator) {
  ScanBudget gave_up;
  gave_up.cancelled = [] { return true; };
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(spec_, gave_up);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kCancelled) << job.status();
  EXPECT_NE(job.status().message().find(base_ + "/data/set"), std::string::npos)
      << job.status();
  ScanBudget late;
  late.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(coordinator_->SubmitJob(spec_, late).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  coordinator_->Shutdown();
  EXPECT_FALSE(coordinator_->SubmitJob(spec_).ok());
  EXPECT_EQ(coordinator_->ListJobs(0, "")->jobs.size(), 0u);
}

// A synthetic data set is a name: it is counted from its preset, needs no
// data root, and an unknown one is named with the ones that exist.
TEST_F(SubmitUnderRootsTest, SyntheticDataSetsNeedNoRoot) {
  spec_.mutable_dataset()->set_path("synthetic:tiny");
  spec_.mutable_dataset()->set_eval_split("test");
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(spec_);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->train_samples(), 512);
  EXPECT_EQ(job->eval_samples(), 128);

  spec_.mutable_dataset()->set_path("synthetic:imagenet");
  absl::Status s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("synthetic:cifar10"), std::string::npos) << s;
  spec_.mutable_dataset()->set_path("synthetic:tiny");
  spec_.mutable_dataset()->set_eval_split("val");
  s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split"), std::string::npos)
      << s;
}

// Finding: splits were joined to the checked path with '/', so "../.." or
// "/etc" escaped the roots and the scan error listed the folder's names.
TEST_F(SubmitUnderRootsTest, SplitsAreFolderNamesNotPaths) {
  for (const std::string& split :
       {std::string("/etc"), std::string("../../../../etc"), std::string(".."),
        std::string("train/../../..")}) {
    spec_.mutable_dataset()->set_split(split);
    absl::Status s = Submit();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << split;
    EXPECT_NE(s.message().find("job_spec.dataset.split"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("is not a folder name"), std::string::npos)
        << s.message();
  }
  spec_.mutable_dataset()->set_split("train");
  spec_.mutable_dataset()->set_eval_split("/home");
  absl::Status s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split"), std::string::npos)
      << s.message();
  spec_.mutable_dataset()->set_eval_split("test");
  EXPECT_TRUE(Submit().ok());
}

TEST_F(SubmitUnderRootsTest, LinksOutOfTheRootsAreRefused) {
  // A split folder that is a link out of the roots.
  fs::remove_all(base_ + "/data/set/test");
  fs::create_directory_symlink(base_ + "/secret/test",
                               base_ + "/data/set/test");
  spec_.mutable_dataset()->set_eval_split("test");
  absl::Status s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split"), std::string::npos)
      << s.message();
  spec_.mutable_dataset()->clear_eval_split();

  // A class folder that is a link out.
  const std::string class_link = base_ + "/data/set/train/class_c";
  fs::create_directory_symlink(base_ + "/secret/train/class_a", class_link);
  s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find("the link " + class_link), std::string::npos)
      << s.message();
  fs::remove(class_link);

  // An image that is a link out.
  const std::string file_link = base_ + "/data/set/train/class_a/9.png";
  fs::create_symlink(base_ + "/secret/train/class_a/0.png", file_link);
  s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(s.message().find(file_link), std::string::npos) << s.message();
  fs::remove(file_link);

  // Links that stay inside the roots are fine.
  fs::create_directory_symlink(base_ + "/data/set/train/class_a", class_link);
  EXPECT_TRUE(Submit().ok());
}

}  // namespace
}  // namespace gradsync::testing

namespace gradsync::testing {
namespace {

// A split held as a tensor file (<path>/<split>.pt) is counted from its
// layout alone; a hostile one is refused naming the file and the problem;
// a link to one outside the roots is refused like a folder.
TEST_F(SubmitUnderRootsTest, TensorFilesAreCountedFromTheirLayout) {
  const std::string dir = base_ + "/data/tensors";
  fs::create_directories(dir);
  FakeTensorFile file;
  file.tensors["x"] = MakeFakeTensor<float>(
      "torch FloatStorage", std::vector<float>(15, 0.5f), {5, 3});
  file.tensors["y"] =
      MakeFakeTensor<int64_t>("torch LongStorage", {0, 1, 1, 0, 1}, {5});
  std::ofstream(dir + "/train.pt", std::ios::binary) << MakeTensorFile(file);
  file.tensors["x"].sizes = {1000000, 1000000};
  std::ofstream(dir + "/test.pt", std::ios::binary) << MakeTensorFile(file);

  spec_.mutable_dataset()->set_path(dir);
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(spec_);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->train_samples(), 5);

  spec_.mutable_dataset()->set_eval_split("test");
  absl::Status s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split: " + dir +
                             "/test.pt: tensor file: x has shape [1000000, "
                             "1000000]"),
            std::string::npos)
      << s;

  // A FIFO named like a split once made the submit wait for a writer.
  const std::string fifo = dir + "/pipe.pt";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  spec_.mutable_dataset()->set_eval_split("pipe");
  s = ReadWithoutWaiting(fifo, [&] { return Submit(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split: " + fifo +
                             " is not a regular file"),
            std::string::npos)
      << s;

  std::ofstream(base_ + "/secret.pt", std::ios::binary) << MakeTensorFile(file);
  fs::create_symlink(base_ + "/secret.pt", dir + "/leak.pt");
  spec_.mutable_dataset()->set_eval_split("leak");
  EXPECT_EQ(Submit().code(), absl::StatusCode::kPermissionDenied);
}

// A split held as WebDataset shards (<path>/<split>/*.tar) is counted from
// its headers; a shard with a member that climbs out is refused naming it.
TEST_F(SubmitUnderRootsTest, ShardsAreCountedFromTheirHeaders) {
  const std::string dir = base_ + "/data/shards";
  fs::create_directories(dir + "/train");
  fs::create_directories(dir + "/test");
  std::string shard;
  for (int i = 0; i < 3; ++i) {
    shard += TarFileMember(std::to_string(i) + ".png", "png bytes") +
             TarFileMember(std::to_string(i) + ".cls", std::to_string(i % 2));
  }
  std::ofstream(dir + "/train/a.tar", std::ios::binary) << shard + TarEnd();
  std::ofstream(dir + "/test/a.tar", std::ios::binary)
      << TarFileMember("../../x.png", "png") + TarFileMember("../../x.cls", "0")
      << TarEnd();
  spec_.mutable_dataset()->set_path(dir);
  absl::StatusOr<v1::Job> job = coordinator_->SubmitJob(spec_);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->train_samples(), 3);
  spec_.mutable_dataset()->set_eval_split("test");
  absl::Status s = Submit();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("job_spec.dataset.eval_split: shard " + dir +
                             "/test/a.tar: member ../../x.png climbs out"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace gradsync::testing
