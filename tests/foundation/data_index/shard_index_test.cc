// WebDataset shards indexed from their headers: samples in shard-name and
// member order with their labels and the image bytes' place; every hostile
// header (a name climbing out, an absolute name, a link, a size past the
// end, a bad checksum) and every incomplete sample (no label, no image, a
// label that is not a class) refused naming the shard and the member or
// key; a shard changed after indexing noticed; a FIFO refused at once.
#include "foundation/data_index/shard_index.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "foundation/data_index/tar_member.h"
#include "tests/fakes/fifo_reader.h"
#include "tests/fakes/test_directory.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

// Recomputes a member's header checksum after a test edited its header.
std::string Resum(std::string member) {
  uint64_t sum = 0;
  for (int i = 0; i < 512; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(member[i]);
  }
  const std::string field = absl::StrFormat("%06o", sum);
  member.replace(148, 6, field);
  member[154] = '\0';
  member[155] = ' ';
  return member;
}

class ShardIndexTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDirectory(); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static std::string Sample(const std::string& key, const std::string& image,
                            const std::string& label) {
    return TarFileMember(key + ".png", image) +
           TarFileMember(key + ".cls", label);
  }

  void ExpectRefused(const std::string& shard_bytes, const std::string& says) {
    const std::string path = Write("bad.tar", shard_bytes);
    absl::StatusOr<ShardIndex> index = IndexShards(dir_.string());
    ASSERT_FALSE(index.ok());
    EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(index.status().message().find("shard " + path + ": " + says),
              std::string::npos)
        << index.status();
  }

  fs::path dir_;
};

TEST_F(ShardIndexTest, SamplesComeInShardAndMemberOrder) {
  Write("b.tar", Sample("k3", "three", "1") + TarEnd());
  Write("a.tar", Sample("k1", "one", "0") +
                     TarFileMember("k1.json", "{}") +  // ignored
                     Sample("sub/k2", "two!", "4") + TarEnd());
  Write("notes.txt", "not a shard");
  EXPECT_TRUE(HoldsShards(dir_.string()));
  absl::StatusOr<ShardIndex> index = IndexShards(dir_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->shards.size(), 2u);
  EXPECT_EQ(index->shards[0].path, (dir_ / "a.tar").string());
  ASSERT_EQ(index->samples.size(), 3u);
  EXPECT_EQ(index->num_classes, 5);
  const std::vector<std::string> keys = {"k1", "sub/k2", "k3"};
  const std::vector<int64_t> labels = {0, 4, 1};
  const std::vector<std::string> images = {"one", "two!", "three"};
  for (size_t i = 0; i < 3; ++i) {
    const ShardSample& s = index->samples[i];
    EXPECT_EQ(s.key, keys[i]);
    EXPECT_EQ(s.label, labels[i]);
    EXPECT_EQ(s.ext, "png");
    std::ifstream in(index->shards[s.shard].path, std::ios::binary);
    std::string bytes(s.size, '\0');
    in.seekg(s.offset);
    in.read(&bytes[0], s.size);
    EXPECT_EQ(bytes, images[i]);
  }
  EXPECT_TRUE(CheckShardUnchanged(index->shards[1]).ok());
}

TEST_F(ShardIndexTest, HostileHeadersAreRefusedNamingTheMember) {
  ExpectRefused(Sample("../../etc/evil", "x", "0") + TarEnd(),
                "member ../../etc/evil.png climbs out of the archive with "
                "'..'");
  ExpectRefused(Sample("/etc/evil", "x", "0") + TarEnd(),
                "member /etc/evil.png has an absolute name");
  std::string link = TarFileMember("k.png", "");
  link[156] = '2';
  link.replace(157, 11, "/etc/passwd");
  ExpectRefused(Resum(link) + TarEnd(),
                "at offset 0: member k.png is a symbolic link to /etc/passwd; "
                "a shard "
                "holds files only");
  std::string cut = Sample("k", std::string(3000, 'p'), "0");
  cut.resize(1500);  // the image's data ends early
  ExpectRefused(cut,
                "member k.png (3000 bytes at offset 512) runs past the "
                "end of the shard (1500 bytes): truncated");
  std::string sum = Sample("k", "x", "0");
  sum[0] = 'j';  // the checksum no longer matches
  ExpectRefused(sum,
                "at offset 0: not a tar header (its checksum does not "
                "match)");
  std::string size = Sample("k", "x", "0");
  size.replace(124, 11, "9999999999x");
  ExpectRefused(Resum(size),
                "at offset 0: member k.png: its size is not an octal number");
}

TEST_F(ShardIndexTest, IncompleteSamplesAreRefusedNamingTheKey) {
  ExpectRefused(TarFileMember("k.png", "x") + TarEnd(),
                "key k has no .cls label");
  ExpectRefused(TarFileMember("k.cls", "1") + TarEnd(),
                "key k has no image (.png, .jpg, .jpeg or .npy member)");
  ExpectRefused(Sample("k", "x", "cat") + TarEnd(),
                "member k.cls does not hold a class index");
  ExpectRefused(Sample("k", "x", "-1") + TarEnd(),
                "member k.cls does not hold a class index");
  ExpectRefused(
      TarFileMember("k.png", "x") + TarFileMember("k.jpg", "y") + TarEnd(),
      "key k has two images");
}

TEST_F(ShardIndexTest, PaxAndLongNamesNameTheNextMember) {
  const std::string long_key(150, 'k');
  const std::string body = " path=" + long_key + ".png\n";  // 161 bytes
  std::string pax =
      TarFileMember("PaxHeader", std::to_string(body.size() + 3) + body);
  pax[156] = 'x';
  std::string gnu = TarFileMember("././@LongLink", long_key + "2.cls");
  gnu[156] = 'L';
  Write("a.tar", Resum(pax) + TarFileMember("ignored", "x") + Resum(gnu) +
                     TarFileMember("ignored2", "3") + TarEnd());
  absl::StatusOr<ShardIndex> index = IndexShards(dir_.string());
  ASSERT_FALSE(index.ok());  // the two parts have different keys
  EXPECT_NE(
      index.status().message().find("key " + long_key + " has no .cls label"),
      std::string::npos)
      << index.status();
}

TEST_F(ShardIndexTest, AShardChangedAfterIndexingIsNoticed) {
  const std::string path = Write("a.tar", Sample("k", "x", "0") + TarEnd());
  absl::StatusOr<ShardIndex> index = IndexShards(dir_.string());
  ASSERT_TRUE(index.ok()) << index.status();
  std::ofstream(path, std::ios::app | std::ios::binary) << "more";
  const absl::Status s = CheckShardUnchanged(index->shards[0]);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("shard " + path +
                             " changed since it was "
                             "indexed"),
            std::string::npos)
      << s;
}

// A FIFO named like a shard once made the index (and so the coordinator's
// submit) wait for a writer forever.
TEST_F(ShardIndexTest, AFifoNamedLikeAShardIsRefusedAtOnce) {
  Write("a.tar", Sample("k", "x", "0") + TarEnd());
  const std::string fifo = (dir_ / "b.tar").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const absl::Status s = ReadWithoutWaiting(fifo, [&] {
                           return IndexShards(dir_.string());
                         }).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("shard " + fifo + " is not a regular file"),
            std::string::npos)
      << s;
}

TEST_F(ShardIndexTest, ADirectoryWithoutSamplesIsRefused) {
  EXPECT_FALSE(HoldsShards(dir_.string()));
  Write("empty.tar", TarEnd());
  absl::StatusOr<ShardIndex> index = IndexShards(dir_.string());
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
