// Snapshots as chunk streams, both ways, without a server: a file cut into
// chunks (WriteSnapshotFile) and put back together with its checks
// (ReadSnapshotChunks, over a fake stream reader); and PreadFull's errors.
#include "coordinator/wire/snapshot_stream.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/wire/sha256.h"
#include "foundation/files/pread_full.h"
#include "tests/fakes/fifo_reader.h"

namespace gradsync {
namespace {

// Serves recorded chunks, then `finish`.
class FakeReader : public grpc::ClientReaderInterface<v1::SnapshotChunk> {
 public:
  FakeReader(std::vector<v1::SnapshotChunk> chunks, grpc::Status finish)
      : chunks_(std::move(chunks)), finish_(std::move(finish)) {}
  void WaitForInitialMetadata() override {}
  bool NextMessageSize(uint32_t* size) override {
    if (next_ >= chunks_.size()) return false;
    *size = static_cast<uint32_t>(chunks_[next_].ByteSizeLong());
    return true;
  }
  bool Read(v1::SnapshotChunk* chunk) override {
    if (next_ >= chunks_.size()) return false;
    *chunk = chunks_[next_++];
    return true;
  }
  grpc::Status Finish() override { return finish_; }

 private:
  std::vector<v1::SnapshotChunk> chunks_;
  size_t next_ = 0;
  grpc::Status finish_;
};

std::string TempPath(const std::string& name) {
  return absl::StrCat(testing::TempDir(), "/snapshot_stream_", getpid(), "_",
                      name);
}

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + 7);
  return s;
}

// The chunks WriteSnapshotFile makes of `contents`.
std::vector<v1::SnapshotChunk> ChunksOf(const std::string& contents,
                                        absl::Status* status) {
  const std::string path = TempPath("chunks.pt");
  { std::ofstream(path, std::ios::binary) << contents; }
  v1::SnapshotMeta meta;
  meta.set_job_id("job-000001");
  meta.set_step(20);
  std::vector<v1::SnapshotChunk> chunks;
  *status = WriteSnapshotFile(path, meta, "w1-ab", 2,
                              [&](const v1::SnapshotChunk& c) {
                                chunks.push_back(c);
                                return true;
                              });
  std::remove(path.c_str());
  return chunks;
}

TEST(SnapshotStreamTest, ChunksRoundTripWithMetaIdentityAndChecksum) {
  const std::string contents = Bytes(2 * kSnapshotChunkBytes + 123);
  absl::Status written;
  const std::vector<v1::SnapshotChunk> chunks = ChunksOf(contents, &written);
  ASSERT_TRUE(written.ok()) << written;
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_TRUE(chunks[0].has_meta());
  EXPECT_EQ(chunks[0].meta().size_bytes(),
            static_cast<int64_t>(contents.size()));
  EXPECT_EQ(chunks[0].worker_id(), "w1-ab");
  EXPECT_EQ(chunks[0].attempt(), 2);
  EXPECT_EQ(chunks[1].offset(), kSnapshotChunkBytes);
  EXPECT_TRUE(chunks[0].sha256().empty());
  EXPECT_EQ(chunks[2].sha256(), Sha256Hex(contents));

  // The reader takes the checksum from the meta, as the coordinator sends it.
  std::vector<v1::SnapshotChunk> served = chunks;
  served[0].mutable_meta()->set_sha256(Sha256Hex(contents));
  FakeReader reader(served, grpc::Status::OK);
  grpc::ClientContext context;
  v1::SnapshotMeta meta;
  std::string data;
  absl::Status read = ReadSnapshotChunks(context, reader, &meta, &data);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(data, contents);
  EXPECT_EQ(meta.step(), 20);
}

TEST(SnapshotStreamTest, ReadingRefusesDamageAndKeepsTheStreamsError) {
  const std::string contents = Bytes(kSnapshotChunkBytes + 10);
  absl::Status written;
  std::vector<v1::SnapshotChunk> chunks = ChunksOf(contents, &written);
  ASSERT_TRUE(written.ok()) << written;
  chunks[0].mutable_meta()->set_sha256(Sha256Hex(contents));
  grpc::ClientContext c1, c2, c3;
  v1::SnapshotMeta meta;
  std::string data;

  std::vector<v1::SnapshotChunk> flipped = chunks;
  (*flipped[1].mutable_data())[3] ^= 1;
  FakeReader damaged(flipped, grpc::Status::OK);
  EXPECT_EQ(ReadSnapshotChunks(c1, damaged, &meta, &data).code(),
            absl::StatusCode::kDataLoss);

  FakeReader missing_first({chunks[1]}, grpc::Status::OK);
  absl::Status s = ReadSnapshotChunks(c2, missing_first, &meta, &data);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("expected byte 0"), std::string::npos) << s;

  FakeReader denied(
      {}, grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not your job"));
  s = ReadSnapshotChunks(c3, denied, &meta, &data);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "not your job");
}

TEST(SnapshotStreamTest, WritingNamesAMissingFileAndStopsWhenTheStreamCloses) {
  v1::SnapshotMeta meta;
  absl::Status s =
      WriteSnapshotFile(TempPath("nope.pt"), meta, "w", 1,
                        [](const v1::SnapshotChunk&) { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("nope.pt"), std::string::npos) << s;

  // A directory or a FIFO (`--model-file <(...)`) is refused before any
  // chunk is sent, not sent as its fstat size (4096, 0) or waited on.
  const std::string fifo = TempPath("fifo.pt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& odd : {testing::TempDir(), fifo}) {
    int sent = 0;
    s = ReadWithoutWaiting(odd, [&] {
      return WriteSnapshotFile(
          odd, meta, "w", 1, [&](const v1::SnapshotChunk&) { return ++sent; });
    });
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(
        s.message().find("snapshot file " + odd + " is not a regular file"),
        std::string::npos)
        << s;
    EXPECT_EQ(sent, 0);
  }
  std::remove(fifo.c_str());

  const std::string path = TempPath("closing.pt");
  { std::ofstream(path, std::ios::binary) << Bytes(3 * kSnapshotChunkBytes); }
  int writes = 0;
  s = WriteSnapshotFile(path, meta, "w", 1,
                        [&](const v1::SnapshotChunk&) { return ++writes < 2; });
  std::remove(path.c_str());
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(writes, 2);
}

TEST(PreadFullTest, ReadsExactlyOrSaysWhereTheFileEnds) {
  const std::string path = TempPath("pread");
  { std::ofstream(path, std::ios::binary) << "0123456789"; }
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  char out[8];
  ASSERT_TRUE(PreadFull(fd, out, 4, 3).ok());
  EXPECT_EQ(std::string(out, 4), "3456");
  absl::Status s = PreadFull(fd, out, 8, 6);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("ends at byte 10"), std::string::npos) << s;
  close(fd);
  std::remove(path.c_str());
  s = PreadFull(-1, out, 1, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace gradsync
