// ExportStateDict: a snapshot's "model" entry comes out alone, tensors and
// storages intact, with no float and no global beyond what PyTorch's
// weights-only loaders accept; hostile snapshots (code to call, storages
// missing or short, foreign archives) are refused with the problem named.
// (The real loaders are run on an exported file by
// tests/integration/e2e_train.py.)
#include "foundation/torch_file/state_dict_export.h"

#include <gtest/gtest.h>

#include <string>

#include "foundation/torch_file/pickle_tree.h"
#include "foundation/torch_file/stored_zip.h"
#include "tests/fakes/shared_pickle.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;

// Builds pickles the way worker/model/checkpoint.cc lays a snapshot out.
class SnapshotBuilder {
 public:
  const PickleValue* Str(const std::string& s) {
    PickleValue* v = tree_.Add(Kind::kString);
    v->text = s;
    return v;
  }
  const PickleValue* Int(int64_t n) {
    PickleValue* v = tree_.Add(Kind::kInt);
    v->integer = n;
    return v;
  }
  const PickleValue* Float(double x) {
    PickleValue* v = tree_.Add(Kind::kFloat);
    v->real = x;
    return v;
  }
  const PickleValue* Global(const std::string& name) {
    PickleValue* v = tree_.Add(Kind::kGlobal);
    v->text = name;
    return v;
  }
  const PickleValue* Node(Kind kind, std::vector<const PickleValue*> items) {
    PickleValue* v = tree_.Add(kind);
    v->items = std::move(items);
    return v;
  }
  // A 1-D float tensor of `numel` elements in storage `key`.
  const PickleValue* Tensor(
      const std::string& key, int64_t numel,
      const std::string& storage = "torch FloatStorage",
      const std::string& rebuild = "torch._utils _rebuild_tensor_v2") {
    const PickleValue* id = Node(
        Kind::kTuple,
        {Str("storage"), Global(storage), Str(key), Str("cpu"), Int(numel)});
    PickleValue* hooks = tree_.Add(Kind::kDict);
    hooks->ordered = true;
    const PickleValue* args =
        Node(Kind::kTuple,
             {Node(Kind::kPersistentId, {id}), Int(0),
              Node(Kind::kTuple, {Int(numel)}), Node(Kind::kTuple, {Int(1)}),
              tree_.Add(Kind::kBool), hooks});
    return Node(Kind::kCall, {Global(rebuild), args});
  }
  // {"model": model, "optimizer": {"lr": 0.1, "exp_avg": tensor}, "epoch": 3}
  // in a torch.save zip with the given storage records.
  std::string Zip(const PickleValue* model, std::vector<ZipRecord> storages) {
    const PickleValue* optimizer = Node(
        Kind::kDict, {Str("lr"), Float(0.1), Str("exp_avg"), Tensor("9", 2)});
    const PickleValue* root =
        Node(Kind::kDict, {Str("model"), model, Str("optimizer"), optimizer,
                           Str("epoch"), Int(3)});
    pickle_ = WritePickle(*root).value();
    std::vector<ZipRecord> records = std::move(storages);
    records.push_back({"snap/data.pkl", pickle_});
    records.push_back({"snap/version", "3\n"});
    return WriteStoredZip(records).value();
  }

 private:
  PickleTree tree_;
  std::string pickle_;
};

const std::string kFourFloats(16, '\x01');
const std::string kTwoFloats(8, '\x02');

TEST(StateDictExportTest, TheModelEntryComesOutAloneWithItsStorages) {
  SnapshotBuilder b;
  const std::string snapshot =
      b.Zip(b.Node(Kind::kDict, {b.Str("fc.weight"), b.Tensor("0", 4),
                                 b.Str("fc.bias"), b.Tensor("1", 2)}),
            {{"snap/data/0", kFourFloats},
             {"snap/data/1", kTwoFloats},
             {"snap/data/9", kTwoFloats}});
  absl::StatusOr<StateDictFile> out = ExportStateDict(snapshot);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->tensors, 2);
  EXPECT_EQ(out->storage_bytes, 24);

  absl::StatusOr<std::vector<ZipRecord>> records = ReadStoredZip(out->bytes);
  ASSERT_TRUE(records.ok()) << records.status();
  std::vector<std::string> names;
  for (const ZipRecord& r : *records) names.push_back(r.name);
  // The optimizer's storage (data/9) is left behind.
  EXPECT_EQ(names, (std::vector<std::string>{
                       "archive/data.pkl", "archive/byteorder",
                       "archive/data/0", "archive/data/1", "archive/version"}));
  EXPECT_EQ((*records)[2].data, kFourFloats);
  EXPECT_EQ((*records)[3].data, kTwoFloats);

  absl::StatusOr<std::unique_ptr<PickleTree>> tree =
      ParsePickle((*records)[0].data);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const PickleValue& root = (*tree)->root();
  ASSERT_EQ(root.kind, Kind::kDict);
  ASSERT_EQ(root.items.size(), 4u);
  EXPECT_EQ(root.items[0]->text, "fc.weight");
  EXPECT_EQ(root.items[2]->text, "fc.bias");
  // No float anywhere: PyTorch 1.13's weights-only loader has no BINFLOAT.
  EXPECT_EQ((*records)[0].data.find('G'), absl::string_view::npos);
}

TEST(StateDictExportTest, ParametersAndEveryAllowedStorageTypePass) {
  SnapshotBuilder b;
  const std::string snapshot =
      b.Zip(b.Node(Kind::kDict,
                   {b.Str("w"),
                    b.Tensor("0", 4, "torch FloatStorage",
                             "torch._utils _rebuild_parameter"),
                    b.Str("steps"), b.Tensor("1", 2, "torch LongStorage"),
                    b.Str("mask"), b.Tensor("2", 8, "torch BoolStorage")}),
            {{"snap/data/0", kFourFloats},
             {"snap/data/1", kFourFloats},
             {"snap/data/2", kTwoFloats},
             {"snap/data/9", kTwoFloats}});
  absl::StatusOr<StateDictFile> out = ExportStateDict(snapshot);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->tensors, 3);
}

void ExpectRefused(const std::string& snapshot, const std::string& words) {
  absl::StatusOr<StateDictFile> out = ExportStateDict(snapshot);
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << words;
  EXPECT_NE(out.status().message().find(words), std::string::npos)
      << out.status();
}

TEST(StateDictExportTest, CodeToCallIsRefusedByName) {
  SnapshotBuilder b;
  const PickleValue* evil =
      b.Node(Kind::kCall, {b.Global("os system"),
                           b.Node(Kind::kTuple, {b.Str("touch /tmp/pwned")})});
  ExpectRefused(b.Zip(b.Node(Kind::kDict, {b.Str("w"), evil}), {}),
                "\"w\" is not a tensor");
  SnapshotBuilder c;
  ExpectRefused(c.Zip(c.Node(Kind::kDict,
                             {c.Str("w"), c.Tensor("0", 4, "builtins eval")}),
                      {{"snap/data/0", kFourFloats}}),
                "builtins eval, which the weights-only loader refuses");
}

TEST(StateDictExportTest, MissingOrShortStoragesAreRefused) {
  SnapshotBuilder b;
  ExpectRefused(b.Zip(b.Node(Kind::kDict, {b.Str("w"), b.Tensor("0", 4)}),
                      {{"snap/data/9", kTwoFloats}}),
                "storage record data/0 is missing");
  SnapshotBuilder c;
  ExpectRefused(c.Zip(c.Node(Kind::kDict, {c.Str("w"), c.Tensor("0", 4)}),
                      {{"snap/data/0", kTwoFloats}}),
                "holds 8 bytes, its tensor needs 16");
  SnapshotBuilder d;
  ExpectRefused(
      d.Zip(d.Node(Kind::kDict, {d.Str("w"), d.Tensor("../x", 4)}), {}),
      "storage key '../x' is not a record name");
}

// A tensor whose arguments share their values through the memo, 60
// levels deep: checked once per value and refused when written out, not
// walked 2^60 times.
TEST(StateDictExportTest, ValuesSharedThroughTheMemoEndTheExport) {
  const std::string pickle = "\x80\x02}" + testing::PickleString("model") +
                             "}" + testing::PickleString("w") +
                             "ctorch._utils\n_rebuild_tensor_v2\n" +
                             testing::SharedChain(60) + "Rss.";
  ExpectRefused(WriteStoredZip({{"snap/data.pkl", pickle}}).value(),
                "expands to more than 16777216 values");
}

TEST(StateDictExportTest, ForeignFilesAreRefused) {
  ExpectRefused(WriteStoredZip({{"a/b.txt", "x"}}).value(),
                "no <archive>/data.pkl record");
  ExpectRefused(WriteStoredZip({{"a/data.pkl", "\x80\x02K\x05."}}).value(),
                "its pickle is not a dict");
  ExpectRefused(WriteStoredZip({{"a/data.pkl", "\x80\x02}."}}).value(),
                "no \"model\" entry");
  ExpectRefused("plain text", "not a stored zip archive");
}

}  // namespace
}  // namespace gradsync
