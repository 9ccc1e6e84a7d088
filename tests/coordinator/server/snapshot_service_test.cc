// Snapshot RPCs over a real server: rank 0 uploads in chunks; other callers
// are refused; bad and aborted uploads leave nothing; users list and pull
// (CLI `model list` / `model pull`), workers download; snapshots survive a
// coordinator restart; a damaged file is not served.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/cli/commands.h"
#include "coordinator/persist/snapshot_store.h"
#include "coordinator/server/auth.h"
#include "coordinator/wire/snapshot_stream.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

std::string Model(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 % 253);
  return s;
}

// Where an upload sends its checksum.
enum class Sum {
  kMeta,       // meta.sha256
  kLastChunk,  // sha256 on the last chunk, meta.sha256 empty
  kBoth,       // both, and they differ
  kEarly,      // on the first of several chunks only
  kNone,
};

// Uploads `data` as worker `w` in chunks of `chunk` bytes; `gap` skips the
// second chunk's bytes; `stop_after` ends the stream early (an abort).
grpc::Status Upload(TestCluster& c, const SimWorker& w, const std::string& data,
                    int64_t step, size_t chunk = 3000, bool gap = false,
                    size_t stop_after = 0, Sum sum = Sum::kMeta) {
  auto ctx = w.Context(30);
  v1::SnapshotMeta stored;
  auto writer = c.workers().UploadSnapshot(ctx.get(), &stored);
  size_t sent = 0;
  for (size_t off = 0, n = 0; off < data.size(); off += chunk, ++n) {
    if (gap && n == 1) continue;
    if (stop_after > 0 && n == stop_after) break;
    v1::SnapshotChunk ch;
    if (off == 0) {
      v1::SnapshotMeta* m = ch.mutable_meta();
      m->set_job_id(w.task()->job_id());
      m->set_step(step);
      m->set_epoch(1);
      m->set_accuracy(0.75);
      m->set_size_bytes(static_cast<int64_t>(data.size()));
      if (sum == Sum::kMeta || sum == Sum::kBoth) {
        m->set_sha256(Sha256Hex(data));
      }
      ch.set_worker_id(w.id());
      ch.set_attempt(w.task()->attempt());
      if (sum == Sum::kEarly) ch.set_sha256(Sha256Hex(data));
    }
    ch.set_offset(static_cast<int64_t>(off));
    ch.set_data(data.substr(off, chunk));
    if (off + chunk >= data.size()) {  // the last chunk
      if (sum == Sum::kLastChunk) ch.set_sha256(Sha256Hex(data));
      if (sum == Sum::kBoth) ch.set_sha256(Sha256Hex(data + "x"));
    }
    if (!writer->Write(ch)) break;
    ++sent;
  }
  writer->WritesDone();
  return writer->Finish();
}

int RunCli(TestCluster& c, const std::function<int(cli::Cli&)>& f,
           std::string* out_text = nullptr, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  cli::Cli cli(c.job_stub(), cli::CliOptions(), out, err);
  const int rc = f(cli);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return rc;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SnapshotServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = UniqueTempDir("snapshot-state");
    cluster_ = std::make_unique<TestCluster>(absl::Seconds(30), state_);
    w0_ = std::make_unique<SimWorker>(cluster_->workers(), "host-a");
    w1_ = std::make_unique<SimWorker>(cluster_->workers(), "host-a");
    job_ = cluster_->Submit(cluster_->Spec(2)).id();
    w0_->AwaitAssignment();
    w1_->AwaitAssignment();
    if (w0_->task()->rank() != 0) std::swap(w0_, w1_);  // w0_ is rank 0
  }
  void TearDown() override {
    w0_.reset();
    w1_.reset();
    cluster_.reset();
    fs::remove_all(state_);
  }

  std::string state_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<SimWorker> w0_, w1_;
  std::string job_;
};

TEST_F(SnapshotServiceTest, RankZeroUploadsUsersListAndPullWorkersDownload) {
  TestCluster& c = *cluster_;
  const std::string model = Model(10000);
  grpc::Status s = Upload(c, *w0_, model, 40);
  ASSERT_TRUE(s.ok()) << s.error_message();

  std::string out, err;
  ASSERT_EQ(RunCli(
                c, [&](cli::Cli& cli) { return cli.ModelList(job_); }, &out),
            0);
  EXPECT_NE(out.find("STEP"), std::string::npos) << out;
  EXPECT_NE(out.find("75.00%"), std::string::npos) << out;
  EXPECT_NE(out.find(Sha256Hex(model).substr(0, 12)), std::string::npos);

  const std::string file = state_ + "/pulled.pt";
  ASSERT_EQ(
      RunCli(
          c, [&](cli::Cli& cli) { return cli.ModelPull(job_, 40, true, file); },
          &out, &err),
      0)
      << err;
  EXPECT_EQ(ReadFile(file), model);
  EXPECT_NE(RunCli(
                c,
                [&](cli::Cli& cli) {
                  return cli.ModelPull(job_, 41, true, file + "2");
                },
                &out, &err),
            0);
  EXPECT_NE(err.find("NOT_FOUND"), std::string::npos) << err;
  EXPECT_NE(err.find("no snapshot of step 41"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(file + "2"));
  EXPECT_NE(
      RunCli(
          c, [&](cli::Cli& cli) { return cli.ModelList("job-9"); }, &out, &err),
      0);
  EXPECT_NE(err.find("NOT_FOUND"), std::string::npos) << err;

  // A worker of the job downloads the latest.
  v1::PullSnapshotRequest request;
  request.set_worker_id(w1_->id());
  request.set_job_id(job_);
  request.set_attempt(w1_->task()->attempt());
  auto ctx = w1_->Context(30);
  auto reader = c.workers().DownloadSnapshot(ctx.get(), request);
  std::string got;
  v1::SnapshotChunk chunk;
  while (reader->Read(&chunk)) got += chunk.data();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(got, model);
}

TEST_F(SnapshotServiceTest, OnlyRankZeroUploadsAndBadUploadsLeaveNothing) {
  TestCluster& c = *cluster_;
  const std::string model = Model(10000);
  grpc::Status s = Upload(c, *w1_, model, 1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << s.error_message();
  s = Upload(c, *w0_, model, 2, 3000, /*gap=*/true);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("chunks must come in order"),
            std::string::npos)
      << s.error_message();
  s = Upload(c, *w0_, model, 3, 3000, false, /*stop_after=*/2);  // aborted
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("6000 of 10000 bytes arrived"),
            std::string::npos)
      << s.error_message();
  const std::string big = Model(1500000);
  s = Upload(c, *w0_, big, 4, big.size());  // one chunk over 1 MiB
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("more than 1048576"), std::string::npos)
      << s.error_message();
  s = Upload(c, *w0_, model, 6, 3000, false, 0, Sum::kNone);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("no checksum"), std::string::npos)
      << s.error_message();
  s = Upload(c, *w0_, model, 7, 3000, false, 0, Sum::kBoth);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("differ"), std::string::npos)
      << s.error_message();
  s = Upload(c, *w0_, model, 8, 3000, false, 0, Sum::kEarly);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("belongs on the last one"),
            std::string::npos)
      << s.error_message();
  s = Upload(c, *w0_, model, 5, 3000, false, 0, Sum::kLastChunk);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::string out;
  RunCli(
      c, [&](cli::Cli& cli) { return cli.ModelList(job_); }, &out);
  EXPECT_EQ(out.find("\n2 "), std::string::npos) << out;
  EXPECT_EQ(out.find("\n3 "), std::string::npos) << out;
  EXPECT_EQ(out.find("\n4 "), std::string::npos) << out;
  for (const char* step : {"\n6 ", "\n7 ", "\n8 "}) {
    EXPECT_EQ(out.find(step), std::string::npos) << out;
  }
  EXPECT_NE(out.find("\n5 "), std::string::npos) << out;
  int files = 0;
  for (const auto& e : fs::directory_iterator(state_ + "/snapshots")) {
    files += e.path().extension() == ".pt" ||
             e.path().filename().string().rfind("upload-", 0) == 0;
  }
  EXPECT_EQ(files, 1);  // step 5's, nothing half-written
}

// What the agent does: WriteSnapshotFile reads the checkpoint file in
// 1 MiB chunks and sends the checksum on the last one.
TEST_F(SnapshotServiceTest, AFileStreamsInChunksWithItsChecksumLast) {
  TestCluster& c = *cluster_;
  const std::string model = Model(2 * kSnapshotChunkBytes + 12345);
  const std::string path = state_ + "/ckpt.pt";
  std::ofstream(path, std::ios::binary) << model;
  v1::SnapshotMeta meta;
  meta.set_job_id(job_);
  meta.set_step(9);
  meta.set_accuracy(-1);
  auto send = [&](const std::string& file, int* chunks) {
    auto ctx = w0_->Context(30);
    v1::SnapshotMeta stored;
    auto writer = c.workers().UploadSnapshot(ctx.get(), &stored);
    absl::Status sent = WriteSnapshotFile(
        file, meta, w0_->id(), w0_->task()->attempt(),
        [&](const v1::SnapshotChunk& chunk) {
          ++*chunks;
          if (chunk.offset() == 0) {
            EXPECT_EQ(chunk.meta().size_bytes(),
                      static_cast<int64_t>(model.size()));
            EXPECT_TRUE(chunk.meta().sha256().empty());
            EXPECT_EQ(chunk.worker_id(), w0_->id());
          } else {
            EXPECT_FALSE(chunk.has_meta());
            EXPECT_TRUE(chunk.worker_id().empty());
          }
          EXPECT_EQ(chunk.sha256().empty(),
                    chunk.offset() + chunk.data().size() < model.size());
          return writer->Write(chunk);
        });
    if (!sent.ok()) ctx->TryCancel();
    writer->WritesDone();
    (void)writer->Finish();
    return sent;
  };
  int chunks = 0;
  ASSERT_TRUE(send(path, &chunks).ok());
  EXPECT_EQ(chunks, 3);
  const std::string pulled = state_ + "/pulled.pt";
  ASSERT_EQ(RunCli(c,
                   [&](cli::Cli& cli) {
                     return cli.ModelPull(job_, 9, true, pulled);
                   }),
            0);
  EXPECT_EQ(ReadFile(pulled), model);

  chunks = 0;
  absl::Status missing = send(state_ + "/no-such.pt", &chunks);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no-such.pt"), std::string::npos) << missing;
  EXPECT_EQ(chunks, 0);
}

// gradsync submit --resume-snapshot JOB[:STEP]: a new job starts from a
// snapshot of another; its workers may fetch that one and no other.
TEST_F(SnapshotServiceTest, ANewJobStartsFromAnotherJobsSnapshot) {
  TestCluster& c = *cluster_;
  const std::string old_model = Model(4000), model = Model(5000);
  ASSERT_TRUE(Upload(c, *w0_, old_model, 12).ok());
  ASSERT_TRUE(Upload(c, *w0_, model, 20).ok());

  auto submit = [&](const std::string& from, int64_t step,
                    const std::string& resume_from, v1::Job* job) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = c.Spec(1);
    request.mutable_spec()->mutable_checkpoint()->set_resume_snapshot_job(from);
    request.mutable_spec()->mutable_checkpoint()->set_resume_snapshot_step(
        step);
    request.mutable_spec()->mutable_checkpoint()->set_resume_from(resume_from);
    grpc::ClientContext ctx;
    return c.job_stub()->SubmitJob(&ctx, request, job);
  };
  v1::Job job;
  grpc::Status s = submit("job-999", 0, "", &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  s = submit(job_, 13, "", &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("13"), std::string::npos)
      << s.error_message();
  s = submit(job_, 0, "/some/ckpt.pt", &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  s = submit("", 5, "", &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << s.error_message();
  ASSERT_TRUE(submit(job_, 0, "", &job).ok());
  EXPECT_EQ(job.spec().checkpoint().resume_snapshot_step(), 20);  // pinned

  SimWorker w(c.workers(), "host-b");
  const v1::Assignment a = w.AwaitAssignment();
  ASSERT_EQ(a.job_id(), job.id());
  EXPECT_TRUE(a.has_resume_snapshot());
  EXPECT_EQ(a.resume_snapshot_job(), job_);
  EXPECT_EQ(a.resume_snapshot_step(), 20);
  EXPECT_FALSE(a.resume_remaining());  // the snapshot's own position
  // The snapshot travels as what it is, not as a path that names nothing.
  EXPECT_TRUE(a.spec().checkpoint().resume_from().empty());

  auto download = [&](const std::string& from, std::string* got) {
    v1::PullSnapshotRequest request;
    request.set_worker_id(w.id());
    request.set_job_id(job.id());
    request.set_attempt(a.attempt());
    request.set_snapshot_job_id(from);
    request.set_step(a.resume_snapshot_step());
    request.set_has_step(true);
    auto ctx = w.Context(30);
    auto reader = c.workers().DownloadSnapshot(ctx.get(), request);
    v1::SnapshotMeta meta;
    return ReadSnapshotChunks(*ctx, *reader, &meta, got);
  };
  std::string got;
  absl::Status downloaded = download(job_, &got);
  ASSERT_TRUE(downloaded.ok()) << downloaded;
  EXPECT_EQ(got, model);
  // The source job ends and is deleted: its snapshots go, but the one this
  // job starts from stays until it has its own.
  {
    v1::CancelJobRequest cancel;
    cancel.set_job_id(job_);
    v1::Job cancelled;
    ASSERT_TRUE(c.jobs().CancelJob(Ctx().get(), cancel, &cancelled).ok());
    v1::DeleteJobRequest del;
    del.set_job_id(job_);
    v1::DeleteJobResponse deleted;
    grpc::Status d = c.jobs().DeleteJob(Ctx().get(), del, &deleted);
    ASSERT_TRUE(d.ok()) << d.error_message();
  }
  got.clear();
  downloaded = download(job_, &got);
  ASSERT_TRUE(downloaded.ok()) << downloaded;
  EXPECT_EQ(got, model);
  int files = 0;
  for (const auto& e : fs::directory_iterator(state_ + "/snapshots")) {
    files += e.path().extension() == ".pt";
  }
  EXPECT_EQ(files, 1);  // step 12 went with its job
  downloaded = download("job-999", &got);
  EXPECT_EQ(downloaded.code(), absl::StatusCode::kPermissionDenied)
      << downloaded;
}

TEST_F(SnapshotServiceTest, SnapshotsSurviveARestartAndDamageIsReported) {
  const std::string model = Model(5000);
  ASSERT_TRUE(Upload(*cluster_, *w0_, model, 7).ok());
  w0_.reset();
  w1_.reset();
  cluster_.reset();  // coordinator restart
  TestCluster c(absl::Seconds(30), state_);
  const std::string file = state_ + "/after-restart.pt";
  std::string out, err;
  ASSERT_EQ(
      RunCli(
          c, [&](cli::Cli& cli) { return cli.ModelPull(job_, 0, false, file); },
          &out, &err),
      0)
      << err;
  EXPECT_EQ(ReadFile(file), model);

  const std::string stored = state_ + "/snapshots/" + Sha256Hex(model) + ".pt";
  {
    std::fstream f(stored, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x01');
  }
  EXPECT_NE(RunCli(
                c,
                [&](cli::Cli& cli) {
                  return cli.ModelPull(job_, 7, true, file + "2");
                },
                &out, &err),
            0);
  EXPECT_NE(err.find("DATA_LOSS"), std::string::npos) << err;
  EXPECT_NE(err.find(stored), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(file + "2"));
}

// Finding (issue 39, 14): with the state directory on a 3 MB file system a
// job SUCCEEDED while every snapshot upload failed with "INTERNAL: cannot
// write <the coordinator's path>", nothing was logged or shown, and
// `model list` said "has no snapshots yet". Now the upload gets
// RESOURCE_EXHAUSTED naming the cause (no path), the job shows
// snapshot_error and counts it, the newest stored snapshot stays, and one
// stored later clears the error. On a real small file system: a 3 MB tmpfs.
class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = UniqueTempDir("full-disk");
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=3m") != 0) {
      const std::string why = std::strerror(errno);
      fs::remove_all(mount_);
      mount_.clear();
      GTEST_SKIP() << "cannot mount a 3 MB tmpfs here (" << why
                   << "; it needs root)";
    }
    state_ = mount_ + "/state";
    cluster_ = std::make_unique<TestCluster>(absl::Seconds(30), state_);
    w0_ = std::make_unique<SimWorker>(cluster_->workers(), "host-a");
    job_ = cluster_->Submit(cluster_->Spec(1)).id();
    w0_->AwaitAssignment();
  }
  void TearDown() override {
    w0_.reset();
    cluster_.reset();
    if (!mount_.empty()) {
      ::umount2(mount_.c_str(), MNT_DETACH);
      fs::remove_all(mount_);
    }
  }

  std::string mount_, state_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<SimWorker> w0_;
  std::string job_;
};

TEST_F(FullDiskTest, AFullDiskIsReportedAndTheNewestSnapshotKept) {
  ASSERT_TRUE(Upload(*cluster_, *w0_, Model(1 << 20), 1, 256 << 10).ok());
  const grpc::Status full =
      Upload(*cluster_, *w0_, Model(5 << 19), 2, 256 << 10);
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << full.error_message();
  EXPECT_NE(full.error_message().find("snapshot storage is full"),
            std::string::npos)
      << full.error_message();
  EXPECT_NE(full.error_message().find("job " + job_ + " step 2"),
            std::string::npos)
      << full.error_message();
  EXPECT_EQ(full.error_message().find(mount_), std::string::npos)
      << full.error_message();

  v1::Job job = cluster_->Get(job_);
  EXPECT_NE(job.snapshot_error().find("snapshot storage is full"),
            std::string::npos)
      << job.snapshot_error();
  EXPECT_EQ(job.snapshot_failures(), 1);
  std::string out;
  ASSERT_EQ(
      RunCli(
          *cluster_, [&](cli::Cli& cli) { return cli.ModelList(job_); }, &out),
      0);
  EXPECT_NE(out.find("The newest snapshots are missing: 1 upload(s) could "
                     "not be stored"),
            std::string::npos)
      << out;
  ASSERT_EQ(
      RunCli(
          *cluster_, [&](cli::Cli& cli) { return cli.Status(job_); }, &out),
      0);
  EXPECT_NE(out.find("Snapshots:  NOT STORED (1 failed)"), std::string::npos)
      << out;
  // The step-1 snapshot is still there, whole.
  v1::ListSnapshotsRequest list;
  list.set_job_id(job_);
  v1::ListSnapshotsResponse listed;
  ASSERT_TRUE(cluster_->jobs().ListSnapshots(Ctx().get(), list, &listed).ok());
  ASSERT_EQ(listed.snapshots_size(), 1);
  EXPECT_EQ(listed.snapshots(0).step(), 1);

  // Room again for a smaller one: stored, and the error clears.
  ASSERT_TRUE(Upload(*cluster_, *w0_, Model(256 << 10), 3, 256 << 10).ok());
  job = cluster_->Get(job_);
  EXPECT_EQ(job.snapshot_error(), "");
  EXPECT_EQ(job.snapshot_failures(), 1);
}

}  // namespace
}  // namespace gradsync::testing
