// ModelFileStore: an upload becomes visible only when complete and its
// checksum proven; the same bytes uploaded twice are kept once; files
// survive a reopen; a malformed index line and a planted name are handled;
// a file in use is not deleted; a file damaged on disk is not served.
#include "coordinator/persist/model_file_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "coordinator/wire/sha256.h"
#include "tests/fakes/test_cluster.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<ModelFileInfo> Upload(ModelFileStore& store,
                                     const std::string& name,
                                     const std::string& data,
                                     const std::string& sha256 = "") {
  auto upload = store.Begin(name, static_cast<int64_t>(data.size()), 1 << 20);
  if (!upload.ok()) return upload.status();
  for (size_t off = 0; off < data.size(); off += 700) {
    absl::Status s = (*upload)->Append(
        static_cast<int64_t>(off), absl::string_view(data).substr(off, 700));
    if (!s.ok()) return s;
  }
  return (*upload)->Commit(sha256.empty() ? Sha256Hex(data) : sha256);
}

class ModelFileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = UniqueTempDir("model-files"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<ModelFileStore> Open() {
    auto store = ModelFileStore::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }
  int Files() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += e.path() != dir_;
    return n;
  }
  std::string dir_;
};

TEST_F(ModelFileStoreTest, UploadsAreContentAddressedAndKeptOnce) {
  auto store = Open();
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const std::string data(5000, 'm');
  auto a = Upload(*store, "/home/u/models/net.pt", data);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->sha256, Sha256Hex(data));
  EXPECT_EQ(a->name, "net.pt");  // the last path component only
  auto b = Upload(*store, "copy.pt", data);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->name, "net.pt");  // the stored one
  EXPECT_EQ(store->List().size(), 1u);
  // Survives a reopen, bytes checked on the way out.
  store = Open();
  auto found = store->Find(a->sha256);
  ASSERT_TRUE(found.ok()) << found.status();
  std::string read;
  ASSERT_TRUE(store
                  ->ReadChunks(*found, 1024,
                               [&](int64_t, absl::string_view piece) {
                                 read.append(piece.data(), piece.size());
                                 return true;
                               })
                  .ok());
  EXPECT_EQ(read, data);
}

TEST_F(ModelFileStoreTest, BadUploadsLeaveNothingBehind) {
  auto store = Open();
  const std::string data(3000, 'x');
  auto wrong = Upload(*store, "a.pt", data, std::string(64, '0'));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("checksum mismatch"),
            std::string::npos);
  {
    auto upload = store->Begin("b.pt", 3000, 1 << 20);
    ASSERT_TRUE(upload.ok());
    EXPECT_EQ((*upload)->Append(10, "late").code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ((*upload)->Commit(Sha256Hex(data)).status().code(),
              absl::StatusCode::kInvalidArgument);  // bytes missing
  }
  EXPECT_EQ(store->Begin("big.pt", (1 << 20) + 1, 1 << 20).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->List().empty());
  EXPECT_EQ(Files(), 0);
}

TEST_F(ModelFileStoreTest, FilesInUseAreNotDeleted) {
  auto store = Open();
  auto a = Upload(*store, "a.pt", std::string(100, 'a'));
  ASSERT_TRUE(a.ok());
  absl::Status used = store->Delete(
      a->sha256, [](const std::string&) { return "job job-000007"; });
  EXPECT_EQ(used.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(used.message().find("job-000007"), std::string::npos) << used;
  EXPECT_TRUE(
      store->Delete(a->sha256, [](const std::string&) { return ""; }).ok());
  EXPECT_EQ(store->Find(a->sha256).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Find("../../etc/passwd").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(store->PathOf(*a)));
}

TEST_F(ModelFileStoreTest, DamagedFilesAndIndexLinesAreReported) {
  std::string sha;
  {
    auto store = Open();
    auto a = Upload(*store, "a.pt", std::string(2000, 'a'));
    ASSERT_TRUE(a.ok());
    sha = a->sha256;
    std::ofstream(store->PathOf(*a), std::ios::binary | std::ios::trunc)
        << std::string(2000, 'b');
  }
  // A malformed line and one whose file is missing are skipped.
  std::ofstream(dir_ + "/index.tsv", std::ios::app)
      << "not a line\n"
      << std::string(64, 'c') << "\t10\t0\tgone.pt\n";
  auto store = Open();
  ASSERT_EQ(store->List().size(), 1u);
  absl::Status read =
      store->ReadChunks(store->List()[0], 1 << 20,
                        [](int64_t, absl::string_view) { return true; });
  EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
  EXPECT_NE(read.message().find("corrupt"), std::string::npos) << read;
}

}  // namespace
}  // namespace gradsync::testing
