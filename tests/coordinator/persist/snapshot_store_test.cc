// SnapshotStore: chunked uploads become visible only when complete and
// verified; bad chunks, sizes and checksums are refused and leave nothing
// behind; snapshots survive a reopen (coordinator restart); a file damaged
// on disk is reported, not served; retention keeps the last K and the best.
#include "coordinator/persist/snapshot_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

std::string Bytes(int step, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 31 + step) % 251);
  return s;
}

// Uploads `data` for (job, step) in chunks of `chunk` bytes.
absl::StatusOr<SnapshotInfo> Upload(SnapshotStore& store,
                                    const std::string& job, int64_t step,
                                    const std::string& data,
                                    double accuracy = -1, size_t chunk = 1000) {
  SnapshotInfo info;
  info.job_id = job;
  info.step = step;
  info.accuracy = accuracy;
  info.size = static_cast<int64_t>(data.size());
  auto upload = store.Begin(info, 1 << 20);
  if (!upload.ok()) return upload.status();
  for (size_t off = 0; off < data.size(); off += chunk) {
    absl::Status s = (*upload)->Append(
        static_cast<int64_t>(off), absl::string_view(data).substr(off, chunk));
    if (!s.ok()) return s;
  }
  return (*upload)->Commit(Sha256Hex(data));
}

// Files in `dir` other than the index.
int DataFiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".pt") ++n;
  }
  return n;
}

class SnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = UniqueTempDir("snapshots"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<SnapshotStore> Open(int keep_last = 3) {
    auto store = SnapshotStore::Open(dir_, {keep_last, true});
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }
  std::string dir_;
};

TEST_F(SnapshotStoreTest, ChunkedUploadRoundTripsAndSurvivesAReopen) {
  const std::string data = Bytes(5, 4500);
  {
    auto store = Open();
    absl::StatusOr<SnapshotInfo> info = Upload(*store, "job-1", 5, data, 0.8);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->sha256, Sha256Hex(data));
    EXPECT_EQ(store->PathOf(*info), dir_ + "/" + info->sha256 + ".pt");
  }
  auto store = Open();  // as after a coordinator restart
  ASSERT_EQ(store->List("job-1").size(), 1u);
  absl::StatusOr<SnapshotInfo> latest = store->Find("job-1", -1);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->step, 5);
  EXPECT_DOUBLE_EQ(latest->accuracy, 0.8);
  absl::StatusOr<std::string> read = store->Read(*latest);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
  EXPECT_EQ(store->Find("job-1", 6).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Find("job-2", -1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SnapshotStoreTest, BadUploadsAreRefusedAndLeaveNothingBehind) {
  auto store = Open();
  const std::string data = Bytes(1, 3000);
  SnapshotInfo info;
  info.job_id = "job-1";
  info.step = 1;
  info.size = 3000;
  EXPECT_EQ(store->Begin(info, 2000).status().code(),  // oversized
            absl::StatusCode::kInvalidArgument);
  {
    auto upload = store->Begin(info, 1 << 20);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->Append(0, data.substr(0, 1000)).ok());
    absl::Status s = (*upload)->Append(2000, data.substr(2000));  // a gap
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("expected byte 1000"), std::string::npos) << s;
    EXPECT_EQ((*upload)->Append(1000, std::string(2500, 'x')).code(),
              absl::StatusCode::kInvalidArgument);  // past the size
  }                                                 // abandoned: discarded
  {
    auto upload = store->Begin(info, 1 << 20);
    ASSERT_TRUE((*upload)->Append(0, data).ok());
    absl::StatusOr<SnapshotInfo> c = (*upload)->Commit(Sha256Hex("other"));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("checksum mismatch"),
              std::string::npos);
  }
  {
    auto upload = store->Begin(info, 1 << 20);
    ASSERT_TRUE((*upload)->Append(0, data.substr(0, 10)).ok());
    EXPECT_EQ((*upload)->Commit(Sha256Hex(data)).status().code(),
              absl::StatusCode::kInvalidArgument);  // incomplete
  }
  EXPECT_TRUE(store->List("job-1").empty());
  EXPECT_EQ(DataFiles(dir_), 0);
}

TEST_F(SnapshotStoreTest, ADamagedFileIsReportedNotServed) {
  auto store = Open();
  absl::StatusOr<SnapshotInfo> info =
      Upload(*store, "job-1", 3, Bytes(3, 2000));
  ASSERT_TRUE(info.ok());
  {
    std::fstream f(store->PathOf(*info),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  absl::StatusOr<std::string> read = store->Read(*info);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(read.status().message().find(store->PathOf(*info)),
            std::string::npos)
      << read.status();
}

// Damage is found while streaming: a wrong checksum before the last piece
// (which is never given), a wrong size before the first.
TEST_F(SnapshotStoreTest, ReadChunksNeverGivesTheLastPieceOfADamagedFile) {
  auto store = Open();
  const std::string data = Bytes(4, 2000);
  absl::StatusOr<SnapshotInfo> info = Upload(*store, "job-1", 4, data);
  ASSERT_TRUE(info.ok());
  std::vector<int64_t> offsets;
  auto collect = [&](int64_t offset, absl::string_view piece) {
    offsets.push_back(offset);
    EXPECT_EQ(piece, absl::string_view(data).substr(offset, 500));
    return true;
  };
  ASSERT_TRUE(store->ReadChunks(*info, 500, collect).ok());
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 500, 1000, 1500}));

  {
    std::fstream f(store->PathOf(*info),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1999);
    f.put('\x7f');
  }
  offsets.clear();
  absl::Status s =
      store->ReadChunks(*info, 500, [&](int64_t offset, absl::string_view) {
        offsets.push_back(offset);
        return true;
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 500, 1000}));

  fs::resize_file(store->PathOf(*info), 1999);
  offsets.clear();
  s = store->ReadChunks(*info, 500, [&](int64_t offset, absl::string_view) {
    offsets.push_back(offset);
    return true;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("is not 2000 bytes long"), std::string::npos) << s;
  EXPECT_TRUE(offsets.empty());
}

TEST_F(SnapshotStoreTest, RetentionKeepsTheLastKAndTheBest) {
  auto store = Open(/*keep_last=*/2);
  const double accuracy[] = {0.5, 0.9, 0.6, 0.7, 0.65};
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE(
        Upload(*store, "job-1", step, Bytes(step, 500), accuracy[step - 1])
            .ok());
  }
  ASSERT_TRUE(Upload(*store, "job-2", 1, Bytes(99, 500)).ok());
  std::vector<int64_t> steps;
  for (const SnapshotInfo& i : store->List("job-1")) steps.push_back(i.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 4, 5}));  // best 0.9 + last 2
  EXPECT_EQ(store->List("job-2").size(), 1u);         // other jobs untouched
  EXPECT_EQ(DataFiles(dir_), 4);                      // dropped files are gone
}

std::vector<int64_t> Steps(SnapshotStore& store, const std::string& job) {
  std::vector<int64_t> steps;
  for (const SnapshotInfo& i : store.List(job)) steps.push_back(i.step);
  return steps;
}

TEST_F(SnapshotStoreTest, ReuploadingAStepReplacesItsFile) {
  auto store = Open();
  absl::StatusOr<SnapshotInfo> first =
      Upload(*store, "job-1", 7, Bytes(1, 300));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<SnapshotInfo> second =
      Upload(*store, "job-1", 7, Bytes(2, 300));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{7}));
  EXPECT_FALSE(fs::exists(store->PathOf(*first)));  // not orphaned
  EXPECT_EQ(DataFiles(dir_), 1);
  // The same bytes again keep their one file.
  ASSERT_TRUE(Upload(*store, "job-1", 7, Bytes(2, 300)).ok());
  EXPECT_TRUE(fs::exists(store->PathOf(*second)));
  EXPECT_EQ(DataFiles(dir_), 1);
}

TEST_F(SnapshotStoreTest, APinnedSnapshotOutlivesRetentionUntilItsOwnerHasOne) {
  {
    auto store = Open(/*keep_last=*/1);
    ASSERT_TRUE(Upload(*store, "job-1", 1, Bytes(1, 300)).ok());
    // job-2 starts from job-1's step 1 ("latest" resolved to it).
    absl::StatusOr<SnapshotInfo> pinned = store->Pin("job-2", "job-1", -1);
    ASSERT_TRUE(pinned.ok()) << pinned.status();
    EXPECT_EQ(pinned->step, 1);
    EXPECT_EQ(store->Pin("job-3", "job-1", 9).status().code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(Upload(*store, "job-1", 2, Bytes(2, 300)).ok());
    ASSERT_TRUE(Upload(*store, "job-1", 3, Bytes(3, 300)).ok());
    EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{1, 3}));
  }
  auto store = Open(/*keep_last=*/1);  // pins survive a restart
  EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{1, 3}));
  // Deleting job-1 keeps what job-2 still needs.
  store->DropJob("job-1");
  EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{1}));
  // job-2's own first snapshot frees it.
  ASSERT_TRUE(Upload(*store, "job-2", 1, Bytes(4, 300)).ok());
  EXPECT_TRUE(store->List("job-1").empty());
  EXPECT_EQ(DataFiles(dir_), 1);
}

TEST_F(SnapshotStoreTest, DroppingAJobRemovesItsSnapshotsAndPins) {
  auto store = Open(/*keep_last=*/1);
  ASSERT_TRUE(Upload(*store, "job-1", 1, Bytes(1, 300)).ok());
  ASSERT_TRUE(store->Pin("job-2", "job-1", 1).ok());
  ASSERT_TRUE(Upload(*store, "job-1", 2, Bytes(2, 300)).ok());
  EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{1, 2}));
  store->DropJob("job-2");  // its pin goes, and with it job-1's step 1
  EXPECT_EQ(Steps(*store, "job-1"), (std::vector<int64_t>{2}));
  store->DropJob("job-1");
  EXPECT_TRUE(store->List("job-1").empty());
  EXPECT_EQ(DataFiles(dir_), 0);
}

TEST_F(SnapshotStoreTest, AMalformedIndexLineIsSkippedNotFatal) {
  {
    auto store = Open();
    ASSERT_TRUE(Upload(*store, "job-1", 1, Bytes(1, 300)).ok());
  }
  {
    std::ofstream index(dir_ + "/index.tsv", std::ios::app);
    index << "job-9\tnot-a-step\n\t\t\n";
  }
  auto store = SnapshotStore::Open(dir_, {3, true});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Steps(**store, "job-1"), (std::vector<int64_t>{1}));
  EXPECT_TRUE((*store)->List("job-9").empty());
}

// Where a snapshot stands (epoch, epoch_batch) survives a reopen; an index
// written before epoch_batch existed (7 fields) still loads, as batch 0.
TEST_F(SnapshotStoreTest, TheEpochAndBatchSurviveAndOldIndexesLoad) {
  const std::string data = Bytes(3, 300);
  {
    auto store = Open();
    SnapshotInfo info;
    info.job_id = "job-1";
    info.step = 3;
    info.epoch = 1;
    info.epoch_batch = 120;
    info.size = static_cast<int64_t>(data.size());
    auto upload = store->Begin(info, 1 << 20);
    ASSERT_TRUE(upload.ok()) << upload.status();
    ASSERT_TRUE((*upload)->Append(0, data).ok());
    ASSERT_TRUE((*upload)->Commit(Sha256Hex(data)).ok());
    info.epoch_batch = -1;
    EXPECT_EQ(store->Begin(info, 1 << 20).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  {
    auto store = Open();
    ASSERT_EQ(store->List("job-1").size(), 1u);
    EXPECT_EQ(store->List("job-1")[0].epoch, 1);
    EXPECT_EQ(store->List("job-1")[0].epoch_batch, 120);
  }
  // The same line without its last field, as an older coordinator wrote it.
  std::ifstream in(dir_ + "/index.tsv");
  std::string line;
  std::getline(in, line);
  in.close();
  std::ofstream(dir_ + "/index.tsv")
      << line.substr(0, line.rfind('\t')) << "\n";
  auto store = Open();
  ASSERT_EQ(store->List("job-1").size(), 1u);
  EXPECT_EQ(store->List("job-1")[0].epoch, 1);
  EXPECT_EQ(store->List("job-1")[0].epoch_batch, 0);
}

TEST_F(SnapshotStoreTest, ConcurrentUploadsAreCapped) {
  auto store = SnapshotStore::Open(dir_, {3, true}, /*max_uploads=*/2);
  ASSERT_TRUE(store.ok()) << store.status();
  SnapshotInfo info;
  info.job_id = "job-1";
  info.size = 10;
  auto a = (*store)->Begin(info, 100);
  auto b = (*store)->Begin(info, 100);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = (*store)->Begin(info, 100);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted)
      << c.status();
  a->reset();  // an upload that ends (here abandoned) frees its place
  EXPECT_TRUE((*store)->Begin(info, 100).ok());
}

}  // namespace
}  // namespace gradsync::testing
