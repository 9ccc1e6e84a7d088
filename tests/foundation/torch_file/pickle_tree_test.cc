// The weights-only pickle subset: what torch.save writes parses into the
// tree it describes and writes back to an equal tree; hostile pickles
// (unknown opcodes, truncations, forged memo indices, cycles, deep
// nesting, values shared to expand past a budget) are refused by name, and
// nothing is ever called; a walk visits each value once.
#include "foundation/torch_file/pickle_tree.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fakes/shared_pickle.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;
using namespace std::string_literals;

std::string Bytes(std::initializer_list<int> ops, std::string tail = "") {
  std::string out;
  for (int op : ops) out.push_back(static_cast<char>(op));
  return out + tail;
}

// torch.save's opening, as pickletools shows it for {"w": tensor}:
// PROTO 2, EMPTY_DICT, MARK, 'w', GLOBAL rebuild, MARK, MARK 'storage'
// GLOBAL FloatStorage '0' 'cpu' 4 TUPLE BINPERSID, 0, (2,2), (2,1), False,
// OrderedDict() TUPLE REDUCE SETITEMS STOP.
std::string TensorDictPickle() {
  return "\x80\x02}q\x00(X\x01\x00\x00\x00w"
         "ctorch._utils\n_rebuild_tensor_v2\nq\x01((X\x07\x00\x00\x00storage"
         "ctorch\nFloatStorage\nX\x01\x00\x00\x00"
         "0X\x03\x00\x00\x00"
         "cpu"
         "K\x04tQK\x00K\x02K\x02\x86K\x02K\x01\x86\x89"
         "ccollections\nOrderedDict\n)RtRu."s;
}

TEST(PickleTreeTest, ReadsATensorDictAsTorchSaveWritesIt) {
  absl::StatusOr<std::unique_ptr<PickleTree>> tree =
      ParsePickle(TensorDictPickle());
  ASSERT_TRUE(tree.ok()) << tree.status();
  const PickleValue& root = (*tree)->root();
  ASSERT_EQ(root.kind, Kind::kDict);
  ASSERT_EQ(root.items.size(), 2u);
  EXPECT_EQ(root.items[0]->text, "w");
  const PickleValue& call = *root.items[1];
  ASSERT_EQ(call.kind, Kind::kCall);
  EXPECT_EQ(call.items[0]->text, "torch._utils _rebuild_tensor_v2");
  const PickleValue& args = *call.items[1];
  ASSERT_EQ(args.items.size(), 6u);
  ASSERT_EQ(args.items[0]->kind, Kind::kPersistentId);
  const PickleValue& id = *args.items[0]->items[0];
  EXPECT_EQ(id.items[1]->text, "torch FloatStorage");
  EXPECT_EQ(id.items[4]->integer, 4);
  EXPECT_EQ(args.items[2]->items.size(), 2u);  // size (2, 2)
  EXPECT_FALSE(args.items[4]->boolean);
  EXPECT_EQ(args.items[5]->kind, Kind::kDict);  // OrderedDict(), not a call
  EXPECT_TRUE(args.items[5]->ordered);

  // Written back (without a memo) it reads as the same tree.
  absl::StatusOr<std::string> written = WritePickle(root);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<std::unique_ptr<PickleTree>> again = ParsePickle(*written);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::string> twice = WritePickle((*again)->root());
  EXPECT_EQ(*twice, *written);
}

TEST(PickleTreeTest, NumbersAndStringsKeepTheirValues) {
  PickleTree tree;
  PickleValue* list = tree.Add(Kind::kList);
  for (int64_t n : {int64_t{0}, int64_t{255}, int64_t{256}, int64_t{65536},
                    int64_t{-1}, int64_t{1} << 40, INT64_MIN}) {
    PickleValue* v = tree.Add(Kind::kInt);
    v->integer = n;
    list->items.push_back(v);
  }
  PickleValue* f = tree.Add(Kind::kFloat);
  f->real = 0.125;
  list->items.push_back(f);
  PickleValue* s = tree.Add(Kind::kString);
  s->text = std::string("a\0b\n", 4);
  list->items.push_back(s);
  absl::StatusOr<std::string> bytes = WritePickle(*list);
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<std::unique_ptr<PickleTree>> read = ParsePickle(*bytes);
  ASSERT_TRUE(read.ok()) << read.status();
  const auto& items = (*read)->root().items;
  ASSERT_EQ(items.size(), 9u);
  EXPECT_EQ(items[4]->integer, -1);
  EXPECT_EQ(items[5]->integer, int64_t{1} << 40);
  EXPECT_EQ(items[6]->integer, INT64_MIN);
  EXPECT_EQ(items[7]->real, 0.125);
  EXPECT_EQ(items[8]->text, std::string("a\0b\n", 4));
}

void ExpectRefused(const std::string& pickle, const std::string& words) {
  absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(pickle);
  ASSERT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument) << words;
  EXPECT_NE(tree.status().message().find(words), std::string::npos)
      << tree.status();
}

TEST(PickleTreeTest, HostilePicklesAreRefusedByName) {
  // Opcodes outside the subset: INST, OBJ, BUILD, STACK_GLOBAL.
  ExpectRefused("(ios\nsystem\nS'ls'\n.", "0x69 at byte 1: not in");
  ExpectRefused(Bytes({0x80, 2, 'N', 'b', '.'}), "0x62 at byte 3");
  ExpectRefused(Bytes({0x80, 4, '.'}), "protocol above 2");
  ExpectRefused(Bytes({0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a'}),
                "runs past the end");
  ExpectRefused(Bytes({0x80, 2, 'h', 7, '.'}), "memo 7 was never stored");
  ExpectRefused(Bytes({0x80, 2, 'R', '.'}), "pops an empty stack");
  ExpectRefused(Bytes({0x80, 2, 'N', ')', 'R', '.'}), "calls a non-global");
  ExpectRefused(Bytes({0x80, 2, 'N', '(', 'N', 'N', 'u', '.'}),
                "sets items on a non-dict");
  ExpectRefused(Bytes({0x80, 2, 'N', 'N', '.'}), "malformed stack");
  ExpectRefused(Bytes({0x80, 2, 'N'}), "ends before STOP");
  ExpectRefused(Bytes({0x80, 2, 0x8a, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, '.'}),
                "wider than 64 bits");
  ExpectRefused(Bytes({0x80, 2, 'c'}, "os"), "unterminated name");
  // A mark that TUPLE1 would reach under.
  ExpectRefused(Bytes({0x80, 2, 'N', '(', 0x85, '.'}), "pops an empty stack");
}

TEST(PickleTreeTest, ACallIsKeptAsANodeNotRun) {
  absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(
      "\x80\x02"
      "cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ((*tree)->root().kind, Kind::kCall);
  EXPECT_EQ((*tree)->root().items[0]->text, "os system");
}

// TorchScript archives build their module objects with NEWOBJ and BUILD:
// kept as object nodes naming their class (never run), never written back.
TEST(PickleTreeTest, ObjectsAreKeptAsNodesAndNeverWritten) {
  auto tree = ParsePickle(
      std::string("\x80\x02"
                  "c__torch__\nNet\n)\x81}X\x01\x00\x00\x00kK\x07sb.",
                  31));
  ASSERT_TRUE(tree.ok()) << tree.status();
  const PickleValue& root = (*tree)->root();
  ASSERT_EQ(root.kind, PickleValue::Kind::kObject);
  ASSERT_EQ(root.items.size(), 3u);
  EXPECT_EQ(root.items[0]->text, "__torch__ Net");
  EXPECT_EQ(root.items[1]->kind, PickleValue::Kind::kTuple);
  EXPECT_EQ(root.items[2]->kind, PickleValue::Kind::kDict);
  EXPECT_FALSE(WritePickle(root).ok());
  // BUILD on anything NEWOBJ did not make, or NEWOBJ of a non-global.
  EXPECT_FALSE(ParsePickle("\x80\x02]}b.").ok());
  EXPECT_FALSE(ParsePickle("\x80\x02])\x81.").ok());
}

// Finding: walks over a tree visited a value shared through the memo once
// per path, 2^60 times for 60 levels of a tuple holding the one below
// twice. VisitPickle visits each value once, cycles included; WritePickle,
// which has no memo, refuses to expand past its budget.
TEST(PickleTreeTest, SharedValuesAreVisitedOnceAndNotExpandedOnWrite) {
  absl::StatusOr<std::unique_ptr<PickleTree>> laughs =
      ParsePickle("\x80\x02" + testing::SharedChain(60) + ".");
  ASSERT_TRUE(laughs.ok()) << laughs.status();
  int visits = 0, tuples = 0;
  ASSERT_TRUE(VisitPickle((*laughs)->root(), [&](const PickleValue& v) {
                ++visits;
                tuples += v.kind == Kind::kTuple;
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(visits, 61);
  EXPECT_EQ(tuples, 60);
  absl::StatusOr<std::string> written = WritePickle((*laughs)->root());
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("expands to more than"),
            std::string::npos)
      << written.status();

  // A cycle is visited once a value; visiting stops at the first error.
  absl::StatusOr<std::unique_ptr<PickleTree>> cycle =
      ParsePickle(Bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'}));
  ASSERT_TRUE(cycle.ok()) << cycle.status();
  visits = 0;
  EXPECT_TRUE(VisitPickle((*cycle)->root(), [&](const PickleValue&) {
                ++visits;
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(visits, 1);
  const absl::Status stopped = VisitPickle(
      (*laughs)->root(),
      [&](const PickleValue&) { return absl::InvalidArgumentError("first"); });
  EXPECT_EQ(stopped.message(), "first");
}

TEST(PickleTreeTest, CyclesAndDeepNestingAreRefusedOnWrite) {
  // A list appended into itself through the memo.
  absl::StatusOr<std::unique_ptr<PickleTree>> cycle =
      ParsePickle(Bytes({0x80, 2, ']', 'q', 0, 'h', 0, 'a', '.'}));
  ASSERT_TRUE(cycle.ok()) << cycle.status();
  EXPECT_EQ(WritePickle((*cycle)->root()).status().code(),
            absl::StatusCode::kInvalidArgument);
  // 100,000 nested tuples parse without recursion and are refused on write.
  std::string deep = Bytes({0x80, 2, ')'});
  for (int i = 0; i < 100000; ++i) deep.push_back(static_cast<char>(0x85));
  deep.push_back('.');
  absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(deep);
  ASSERT_TRUE(tree.ok()) << tree.status();
  absl::StatusOr<std::string> written = WritePickle((*tree)->root());
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.status().message().find("deeper than 64"),
            std::string::npos);
}

}  // namespace
}  // namespace gradsync
