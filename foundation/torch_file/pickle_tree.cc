#include "foundation/torch_file/pickle_tree.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;

// Opcodes (Lib/pickle.py's names).
enum Op : unsigned char {
  kMark = '(',
  kStop = '.',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinUnicode = 'X',
  kAppend = 'a',
  kGlobal = 'c',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyList = ']',
  kEmptyTuple = ')',
  kBuild = 'b',
  kProto = 0x80,
  kNewObj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kShortBinUnicode = 0x8c,
};

class Parser {
 public:
  Parser(absl::string_view bytes, PickleTree& tree)
      : bytes_(bytes), tree_(tree) {}

  absl::Status Run() {
    while (true) {
      if (at_ >= bytes_.size()) return Bad("ends before STOP");
      op_at_ = at_;
      op_ = static_cast<unsigned char>(bytes_[at_++]);
      if (op_ == kStop) {
        if (stack_.size() != 1 || !marks_.empty()) {
          return Bad("STOP with a malformed stack");
        }
        tree_.set_root(stack_.back());
        return absl::OkStatus();
      }
      if (absl::Status s = Step(); !s.ok()) return s;
    }
  }

 private:
  absl::Status Bad(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pickle opcode 0x%02x at byte %d: %s", op_, op_at_, what));
  }

  absl::StatusOr<absl::string_view> Take(size_t n) {
    if (bytes_.size() - at_ < n) return Bad("argument runs past the end");
    absl::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }

  absl::StatusOr<uint64_t> TakeLe(int width) {
    absl::StatusOr<absl::string_view> raw = Take(width);
    if (!raw.ok()) return raw.status();
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) {
      value = (value << 8) | static_cast<unsigned char>((*raw)[i]);
    }
    return value;
  }

  PickleValue* Push(Kind kind) {
    PickleValue* v = tree_.Add(kind);
    stack_.push_back(v);
    return v;
  }

  absl::StatusOr<PickleValue*> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
      return Bad("pops an empty stack");
    }
    PickleValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }

  // The values pushed since the last MARK, which is dropped.
  absl::StatusOr<std::vector<const PickleValue*>> PopMark() {
    if (marks_.empty()) return Bad("no MARK to pop to");
    const size_t from = marks_.back();
    marks_.pop_back();
    std::vector<const PickleValue*> items(stack_.begin() + from, stack_.end());
    stack_.resize(from);
    return items;
  }

  absl::Status PushTuple(size_t n) {
    if (stack_.size() < n + (marks_.empty() ? 0 : marks_.back())) {
      return Bad("pops an empty stack");
    }
    std::vector<const PickleValue*> items(stack_.end() - n, stack_.end());
    stack_.resize(stack_.size() - n);
    Push(Kind::kTuple)->items = std::move(items);
    return absl::OkStatus();
  }

  absl::Status AddTo(Kind kind, std::vector<const PickleValue*> items) {
    if (stack_.empty() || stack_.back()->kind != kind) {
      return Bad(kind == Kind::kDict ? "sets items on a non-dict"
                                     : "appends to a non-list");
    }
    if (kind == Kind::kDict && items.size() % 2 != 0) {
      return Bad("a key without a value");
    }
    auto& into = stack_.back()->items;
    into.insert(into.end(), items.begin(), items.end());
    return absl::OkStatus();
  }

  absl::Status String(size_t length_width) {
    absl::StatusOr<uint64_t> length = TakeLe(length_width);
    if (!length.ok()) return length.status();
    absl::StatusOr<absl::string_view> text = Take(*length);
    if (!text.ok()) return text.status();
    Push(Kind::kString)->text = std::string(*text);
    return absl::OkStatus();
  }

  absl::Status Int(int width, bool is_signed) {
    absl::StatusOr<uint64_t> raw = TakeLe(width);
    if (!raw.ok()) return raw.status();
    int64_t value = static_cast<int64_t>(*raw);
    if (is_signed && width < 8 && (*raw >> (8 * width - 1)) != 0) {
      value -= int64_t{1} << (8 * width);  // sign-extend
    }
    Push(Kind::kInt)->integer = value;
    return absl::OkStatus();
  }

  absl::Status Memo(bool put, int width) {
    absl::StatusOr<uint64_t> index = TakeLe(width);
    if (!index.ok()) return index.status();
    if (put) {
      if (stack_.empty()) return Bad("memoizes an empty stack");
      memo_[*index] = stack_.back();
      return absl::OkStatus();
    }
    auto it = memo_.find(*index);
    if (it == memo_.end()) {
      return Bad(absl::StrCat("memo ", *index, " was never stored"));
    }
    stack_.push_back(it->second);
    return absl::OkStatus();
  }

  absl::Status Global() {
    std::string text;
    for (int part = 0; part < 2; ++part) {
      const size_t end = bytes_.find('\n', at_);
      if (end == absl::string_view::npos) return Bad("unterminated name");
      absl::StrAppend(&text, part == 0 ? "" : " ",
                      bytes_.substr(at_, end - at_));
      at_ = end + 1;
    }
    Push(Kind::kGlobal)->text = std::move(text);
    return absl::OkStatus();
  }

  absl::Status Reduce() {
    absl::StatusOr<PickleValue*> args = Pop();
    if (!args.ok()) return args.status();
    absl::StatusOr<PickleValue*> callable = Pop();
    if (!callable.ok()) return callable.status();
    if ((*args)->kind != Kind::kTuple) return Bad("arguments are not a tuple");
    if ((*callable)->kind != Kind::kGlobal) return Bad("calls a non-global");
    if ((*callable)->text == "collections OrderedDict" &&
        (*args)->items.empty()) {
      Push(Kind::kDict)->ordered = true;
      return absl::OkStatus();
    }
    Push(Kind::kCall)->items = {*callable, *args};
    return absl::OkStatus();
  }

  absl::Status Step() {
    switch (op_) {
      case kProto: {
        absl::StatusOr<uint64_t> version = TakeLe(1);
        if (!version.ok()) return version.status();
        if (*version > 2) return Bad("protocol above 2");
        return absl::OkStatus();
      }
      case kMark:
        marks_.push_back(stack_.size());
        return absl::OkStatus();
      case kNone:
        Push(Kind::kNone);
        return absl::OkStatus();
      case kNewTrue:
      case kNewFalse:
        Push(Kind::kBool)->boolean = op_ == kNewTrue;
        return absl::OkStatus();
      case kBinInt1:
        return Int(1, false);
      case kBinInt2:
        return Int(2, false);
      case kBinInt:
        return Int(4, true);
      case kLong1: {
        absl::StatusOr<uint64_t> width = TakeLe(1);
        if (!width.ok()) return width.status();
        if (*width == 0) {
          Push(Kind::kInt);
          return absl::OkStatus();
        }
        if (*width > 8) return Bad("an integer wider than 64 bits");
        return Int(static_cast<int>(*width), true);
      }
      case kBinFloat: {
        absl::StatusOr<absl::string_view> raw = Take(8);
        if (!raw.ok()) return raw.status();
        uint64_t bits = 0;
        for (char c : *raw) bits = (bits << 8) | static_cast<unsigned char>(c);
        double value;
        std::memcpy(&value, &bits, sizeof value);
        Push(Kind::kFloat)->real = value;
        return absl::OkStatus();
      }
      case kBinUnicode:
        return String(4);
      case kShortBinUnicode:
        return String(1);
      case kBinPut:
        return Memo(true, 1);
      case kLongBinPut:
        return Memo(true, 4);
      case kBinGet:
        return Memo(false, 1);
      case kLongBinGet:
        return Memo(false, 4);
      case kEmptyTuple:
        Push(Kind::kTuple);
        return absl::OkStatus();
      case kEmptyList:
        Push(Kind::kList);
        return absl::OkStatus();
      case kEmptyDict:
        Push(Kind::kDict);
        return absl::OkStatus();
      case kTuple1:
      case kTuple2:
      case kTuple3:
        return PushTuple(op_ - kTuple1 + 1);
      case kTuple: {
        absl::StatusOr<std::vector<const PickleValue*>> items = PopMark();
        if (!items.ok()) return items.status();
        Push(Kind::kTuple)->items = std::move(*items);
        return absl::OkStatus();
      }
      case kSetItems:
      case kAppends: {
        absl::StatusOr<std::vector<const PickleValue*>> items = PopMark();
        if (!items.ok()) return items.status();
        return AddTo(op_ == kSetItems ? Kind::kDict : Kind::kList,
                     std::move(*items));
      }
      case kSetItem:
      case kAppend: {
        const size_t n = op_ == kSetItem ? 2 : 1;
        const size_t floor = marks_.empty() ? 0 : marks_.back();
        if (stack_.size() < floor + n + 1) return Bad("pops an empty stack");
        std::vector<const PickleValue*> items(stack_.end() - n, stack_.end());
        stack_.resize(stack_.size() - n);
        return AddTo(op_ == kSetItem ? Kind::kDict : Kind::kList,
                     std::move(items));
      }
      case kGlobal:
        return Global();
      case kReduce:
        return Reduce();
      case kNewObj: {
        absl::StatusOr<PickleValue*> args = Pop();
        if (!args.ok()) return args.status();
        absl::StatusOr<PickleValue*> cls = Pop();
        if (!cls.ok()) return cls.status();
        if ((*args)->kind != Kind::kTuple)
          return Bad("arguments are not a tuple");
        if ((*cls)->kind != Kind::kGlobal) return Bad("builds a non-global");
        Push(Kind::kObject)->items = {*cls, *args};
        return absl::OkStatus();
      }
      case kBuild: {
        absl::StatusOr<PickleValue*> state = Pop();
        if (!state.ok()) return state.status();
        if (stack_.empty() ||
            (!marks_.empty() && stack_.size() == marks_.back())) {
          return Bad("pops an empty stack");
        }
        PickleValue* object = stack_.back();
        if (object->kind != Kind::kObject) {
          return Bad("BUILD on what NEWOBJ did not make");
        }
        object->items.push_back(*state);
        return absl::OkStatus();
      }
      case kBinPersId: {
        absl::StatusOr<PickleValue*> id = Pop();
        if (!id.ok()) return id.status();
        Push(Kind::kPersistentId)->items = {*id};
        return absl::OkStatus();
      }
      default:
        return Bad("not in the subset of pickle gradsync reads");
    }
  }

  absl::string_view bytes_;
  PickleTree& tree_;
  size_t at_ = 0;
  size_t op_at_ = 0;
  unsigned char op_ = 0;
  std::vector<PickleValue*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleValue*> memo_;
};

void PutLe(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out.push_back(static_cast<char>(value >> (8 * i)));
}

void PutInt(std::string& out, int64_t value) {
  if (value >= 0 && value < 0x100) {
    out.push_back(static_cast<char>(kBinInt1));
    PutLe(out, static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value < 0x10000) {
    out.push_back(static_cast<char>(kBinInt2));
    PutLe(out, static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out.push_back(static_cast<char>(kBinInt));
    PutLe(out, static_cast<uint64_t>(value), 4);
  } else {
    out.push_back(static_cast<char>(kLong1));
    out.push_back(8);
    PutLe(out, static_cast<uint64_t>(value), 8);
  }
}

// `left`: how many more values may be written; a value shared through the
// memo is written once per use, so a tree of a few hundred values can
// stand for 2^64 of them.
absl::Status Write(const PickleValue& v, int depth, int64_t& left,
                   std::string& out) {
  if (depth > kMaxPickleDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pickled value nests deeper than ", kMaxPickleDepth, " levels"));
  }
  if (--left < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pickled value expands to more than ", kMaxPickleWriteValues,
        " values (values shared through the memo are written once per use)"));
  }
  auto write_items = [&](size_t from) -> absl::Status {
    for (size_t i = from; i < v.items.size(); ++i) {
      if (absl::Status s = Write(*v.items[i], depth + 1, left, out); !s.ok())
        return s;
    }
    return absl::OkStatus();
  };
  switch (v.kind) {
    case Kind::kNone:
      out.push_back(static_cast<char>(kNone));
      return absl::OkStatus();
    case Kind::kBool:
      out.push_back(static_cast<char>(v.boolean ? kNewTrue : kNewFalse));
      return absl::OkStatus();
    case Kind::kInt:
      PutInt(out, v.integer);
      return absl::OkStatus();
    case Kind::kFloat: {
      uint64_t bits;
      std::memcpy(&bits, &v.real, sizeof bits);
      out.push_back(static_cast<char>(kBinFloat));
      for (int i = 7; i >= 0; --i)
        out.push_back(static_cast<char>(bits >> (8 * i)));
      return absl::OkStatus();
    }
    case Kind::kString:
      out.push_back(static_cast<char>(kBinUnicode));
      PutLe(out, v.text.size(), 4);
      out += v.text;
      return absl::OkStatus();
    case Kind::kGlobal: {
      const size_t space = v.text.find(' ');
      if (space == std::string::npos ||
          v.text.find('\n') != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("global '", v.text, "' is not 'module name'"));
      }
      absl::StrAppend(&out, std::string(1, static_cast<char>(kGlobal)),
                      v.text.substr(0, space), "\n", v.text.substr(space + 1),
                      "\n");
      return absl::OkStatus();
    }
    case Kind::kTuple:
      out.push_back(static_cast<char>(v.items.empty() ? kEmptyTuple : kMark));
      if (v.items.empty()) return absl::OkStatus();
      if (absl::Status s = write_items(0); !s.ok()) return s;
      out.push_back(static_cast<char>(kTuple));
      return absl::OkStatus();
    case Kind::kList:
    case Kind::kDict:
      if (v.kind == Kind::kDict && v.ordered) {
        absl::StrAppend(&out, std::string(1, static_cast<char>(kGlobal)),
                        "collections\nOrderedDict\n",
                        std::string(1, static_cast<char>(kEmptyTuple)),
                        std::string(1, static_cast<char>(kReduce)));
      } else {
        out.push_back(
            static_cast<char>(v.kind == Kind::kList ? kEmptyList : kEmptyDict));
      }
      if (v.items.empty()) return absl::OkStatus();
      out.push_back(static_cast<char>(kMark));
      if (absl::Status s = write_items(0); !s.ok()) return s;
      out.push_back(
          static_cast<char>(v.kind == Kind::kList ? kAppends : kSetItems));
      return absl::OkStatus();
    case Kind::kCall:
      if (absl::Status s = write_items(0); !s.ok()) return s;
      out.push_back(static_cast<char>(kReduce));
      return absl::OkStatus();
    case Kind::kPersistentId:
      if (absl::Status s = write_items(0); !s.ok()) return s;
      out.push_back(static_cast<char>(kBinPersId));
      return absl::OkStatus();
    case Kind::kObject:
      return absl::InvalidArgumentError(
          "an object built by NEWOBJ is not written (weights-only files have "
          "none)");
  }
  return absl::InternalError("unknown pickle value kind");
}

}  // namespace

PickleValue* PickleTree::Add(PickleValue::Kind kind) {
  nodes_.push_back(std::make_unique<PickleValue>());
  nodes_.back()->kind = kind;
  return nodes_.back().get();
}

absl::StatusOr<std::unique_ptr<PickleTree>> ParsePickle(
    absl::string_view bytes) {
  auto tree = std::make_unique<PickleTree>();
  Parser parser(bytes, *tree);
  if (absl::Status s = parser.Run(); !s.ok()) return s;
  return tree;
}

absl::StatusOr<std::string> WritePickle(const PickleValue& value) {
  std::string out;
  out.push_back(static_cast<char>(kProto));
  out.push_back(2);
  int64_t left = kMaxPickleWriteValues;
  if (absl::Status s = Write(value, 0, left, out); !s.ok()) return s;
  out.push_back(static_cast<char>(kStop));
  return out;
}

absl::Status VisitPickle(
    const PickleValue& root,
    const std::function<absl::Status(const PickleValue&)>& visit) {
  std::unordered_set<const PickleValue*> seen;
  std::vector<const PickleValue*> todo = {&root};
  while (!todo.empty()) {
    const PickleValue* v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    if (absl::Status s = visit(*v); !s.ok()) return s;
    // Reversed, so items are visited in order.
    todo.insert(todo.end(), v->items.rbegin(), v->items.rend());
  }
  return absl::OkStatus();
}

const PickleValue* FindStringKey(const PickleValue& dict,
                                 absl::string_view key) {
  if (dict.kind != PickleValue::Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PickleValue& k = *dict.items[i];
    if (k.kind == PickleValue::Kind::kString && k.text == key) {
      return dict.items[i + 1];
    }
  }
  return nullptr;
}

}  // namespace gradsync
