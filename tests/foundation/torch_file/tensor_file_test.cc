// The tensor-file reader: a file laid out as torch.save writes {"x": X,
// "y": Y} gives its samples, shapes and bytes without reading them; every
// hostile variant is refused naming what is wrong, before any size it
// declares is trusted; a changed byte is caught by the checksum.
#include "foundation/torch_file/tensor_file.h"

#include <gtest/gtest.h>

#include <vector>

#include "foundation/torch_file/stored_zip.h"
#include "foundation/torch_file/tensor_ref.h"
#include "tests/fakes/shared_pickle.h"
#include "tests/fakes/tensor_files.h"

namespace gradsync {
namespace {

using testing::FakeTensor;
using testing::FakeTensorFile;
using testing::MakeFakeTensor;
using testing::MakeTensorFile;

// 4 samples of 2x3 bytes, class indices.
FakeTensorFile Good() {
  std::vector<uint8_t> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<uint8_t>(i);
  FakeTensorFile f;
  f.tensors["x"] = MakeFakeTensor("torch ByteStorage", x, {4, 2, 3});
  f.tensors["y"] =
      MakeFakeTensor<int64_t>("torch LongStorage", {0, 1, 2, 1}, {4});
  return f;
}

void ExpectRefused(const FakeTensorFile& f, const std::string& says) {
  const std::string file = MakeTensorFile(f);
  absl::StatusOr<TensorFileLayout> layout = ReadTensorFileLayout(file);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find(says), std::string::npos)
      << layout.status();
}

TEST(TensorFileTest, AGoodFileGivesItsSamplesShapesAndBytes) {
  const std::string file = MakeTensorFile(Good());
  absl::StatusOr<TensorFileLayout> layout = ReadTensorFileLayout(file);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->samples, 4);
  EXPECT_EQ(layout->x.dtype, "uint8");
  EXPECT_EQ(layout->x.shape, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(layout->x.bytes.size(), 24u);
  EXPECT_EQ(layout->x.bytes[23], 23);
  EXPECT_EQ(layout->y.dtype, "int64");
  EXPECT_EQ(layout->y.shape, (std::vector<int64_t>{4}));
  EXPECT_TRUE(VerifyTensorFileData(*layout).ok());
}

TEST(TensorFileTest, FloatTargetsOfAnyRowShapeAreTaken) {
  FakeTensorFile f = Good();
  f.tensors["x"] = MakeFakeTensor<float>("torch FloatStorage",
                                         std::vector<float>(8, 0.5f), {4, 2});
  f.tensors["y"] = MakeFakeTensor<float>("torch FloatStorage",
                                         std::vector<float>(12, 1.f), {4, 3});
  absl::StatusOr<TensorFileLayout> layout =
      ReadTensorFileLayout(MakeTensorFile(f));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->y.dtype, "float32");
  EXPECT_EQ(layout->y.shape, (std::vector<int64_t>{4, 3}));
}

TEST(TensorFileTest, AForeignGlobalIsRefusedByName) {
  FakeTensorFile f = Good();
  f.foreign_global = "os system";
  ExpectRefused(f, "its pickle names the global 'os system'");
}

TEST(TensorFileTest, AShapeItsBytesDoNotBackIsRefused) {
  FakeTensorFile f = Good();
  f.tensors["x"].sizes = {1000000, 1000000};  // 10^12 elements, 24 bytes
  ExpectRefused(f,
                "x has shape [1000000, 1000000] (1000000000000 elements "
                "from offset 0) but its storage record t/data/0 holds 24 "
                "bytes");
  f = Good();
  f.tensors["y"].offset = 3;  // 3 + 4 elements of 4
  ExpectRefused(f, "y has shape [4]");
  f = Good();
  f.tensors["x"].sizes = {int64_t{1} << 40, 1 << 20};
  ExpectRefused(f,
                "(1152921504606846976 elements from offset 0) but its "
                "storage record");
  f = Good();
  f.tensors["x"].strides = {int64_t{1} << 41, 3, 1};
  ExpectRefused(f,
                "stride holds something other than an integer in [0, "
                "2^40]");
}

TEST(TensorFileTest, OtherDtypesLayoutsAndCountsAreRefused) {
  FakeTensorFile f = Good();
  f.tensors["x"] = MakeFakeTensor<int64_t>("torch LongStorage", {1, 2}, {2});
  ExpectRefused(f, "x is int64; it must be uint8 or float32");
  f = Good();
  f.tensors["x"].strides = {1, 12, 4};  // saved transposed
  ExpectRefused(f,
                "x is not contiguous (stride [1, 12, 4] for shape [4, 2, "
                "3]); save x.contiguous()");
  f = Good();
  f.tensors["y"] = MakeFakeTensor<int64_t>("torch LongStorage", {0, 1, 2}, {3});
  ExpectRefused(f, "x holds 4 samples and y 3; one target per sample");
  f = Good();
  f.tensors["y"] = MakeFakeTensor<int64_t>("torch LongStorage",
                                           {0, 1, 2, 1, 0, 1, 2, 1}, {4, 2});
  ExpectRefused(f,
                "y is int64 of shape [4, 2]; class indices are one per "
                "sample, [N]");
  f = Good();
  f.tensors.erase("y");
  ExpectRefused(f, "no \"y\" entry");
  f = Good();
  f.tensors["x"].storage = "torch.nn Module";
  ExpectRefused(f, "its pickle names the global 'torch.nn Module'");
}

// Finding: a pickle sharing its values through the memo, 60 levels of a
// tuple holding the one below twice, took the global check 2^60 steps
// (the coordinator's submit never returned). Each value is checked once.
TEST(TensorFileTest, ValuesSharedThroughTheMemoAreCheckedOnce) {
  const std::string pickle = "\x80\x02}" + testing::PickleString("x") +
                             testing::SharedChain(60) + "s.";
  const std::string file =
      WriteStoredZip({{"t/data.pkl", pickle}, {"t/version", "3\n"}}).value();
  absl::StatusOr<TensorFileLayout> layout = ReadTensorFileLayout(file);
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(layout.status().message().find("tensor file: \"x\": not a tensor"),
            std::string::npos)
      << layout.status();
}

TEST(TensorFileTest, TheArchiveFolderIsTheOneHoldingDataPkl) {
  EXPECT_EQ(ArchiveFolderOf("t/data.pkl"), "t/");
  EXPECT_EQ(ArchiveFolderOf("archive/data.pkl"), "archive/");
  for (const char* other : {"data.pkl", "/data.pkl", "a/b/data.pkl",
                            "t/data.pkl.x", "t/xdata.pkl", "t/data/0"}) {
    EXPECT_EQ(ArchiveFolderOf(other), "") << other;
  }
}

TEST(TensorFileTest, NotATorchSaveFileIsRefused) {
  absl::StatusOr<TensorFileLayout> layout =
      ReadTensorFileLayout("just some text, not a zip");
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("not a torch.save file"),
            std::string::npos)
      << layout.status();
  std::string file = MakeTensorFile(Good());
  file.resize(file.size() / 2);  // truncated
  EXPECT_EQ(ReadTensorFileLayout(file).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorFileTest, AChangedByteFailsTheChecksum) {
  std::string file = MakeTensorFile(Good());
  absl::StatusOr<TensorFileLayout> layout = ReadTensorFileLayout(file);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const size_t at = layout->x.bytes.data() - file.data();
  file[at + 5] ^= 0x40;
  layout = ReadTensorFileLayout(file);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const absl::Status s = VerifyTensorFileData(*layout);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("record t/data/0 does not match its CRC-32"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace gradsync
