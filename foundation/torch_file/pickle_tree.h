// The part of Python's pickle format that torch.load(weights_only=True)
// and TorchScript archives use (protocol 2 containers, numbers, strings,
// GLOBAL, REDUCE, NEWOBJ, BUILD and persistent ids), read into a tree of
// values and written back, without running anything: a REDUCE stays a call
// node naming its callable and a NEWOBJ an object node naming its class, so
// the caller decides what may be called or built. Used to repackage a
// snapshot's weights (state_dict_export.h) and to check a model file's
// pickles before LibTorch reads them (script_archive.h).
//
// Parsing treats the bytes as hostile: an opcode outside the subset, a
// truncated argument, a memo index never stored or a malformed stack is
// INVALID_ARGUMENT naming the opcode and offset; nodes live in the tree's
// arena, so self-references and deep nesting cost no recursion until a
// bounded walk (kMaxPickleDepth) meets them.
// Thread-compatible: a PickleTree is immutable once parsed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// How deep WritePickle goes before refusing: a state_dict nests five
// levels.
inline constexpr int kMaxPickleDepth = 64;
// How many values WritePickle writes before refusing: a state_dict of
// 10,000 tensors is about 250,000.
inline constexpr int64_t kMaxPickleWriteValues = int64_t{1} << 24;

struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,    // `items` alternate key, value; `ordered`: an OrderedDict
    kGlobal,  // `text` is "module name", as GLOBAL spells it
    kCall,    // REDUCE: items[0] the callable, items[1] its argument tuple
    kPersistentId,  // BINPERSID: items[0] the id
    kObject,        // NEWOBJ: items[0] the class, items[1] its argument tuple,
                    // then the state each BUILD gave it
  };
  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  bool ordered = false;
  std::string text;
  std::vector<const PickleValue*> items;
};

// Owns every node of one pickled object.
class PickleTree {
 public:
  const PickleValue& root() const { return *root_; }

  // A new node owned by this tree.
  PickleValue* Add(PickleValue::Kind kind);
  void set_root(const PickleValue* root) { root_ = root; }

 private:
  std::vector<std::unique_ptr<PickleValue>> nodes_;
  const PickleValue* root_ = nullptr;
};

// Reads one pickle (up to its STOP). A REDUCE of collections.OrderedDict
// with no arguments becomes an ordered kDict, so SETITEMS can fill it.
absl::StatusOr<std::unique_ptr<PickleTree>> ParsePickle(
    absl::string_view bytes);

// The value under the string key `key` of the kDict `dict`, or null (also
// when `dict` is not a dict).
const PickleValue* FindStringKey(const PickleValue& dict,
                                 absl::string_view key);

// Calls `visit` on `root` and every value under it, depth first in item
// order, each distinct value once: a value shared through the memo (so a
// pickle of n values standing for 2^n) and a cycle cost one visit each,
// and no recursion. Returns the first error `visit` returns.
absl::Status VisitPickle(
    const PickleValue& root,
    const std::function<absl::Status(const PickleValue&)>& visit);

// `value` as a protocol-2 pickle ending in STOP, with no memo: a shared
// node is written once per use. INVALID_ARGUMENT when nested deeper than
// kMaxPickleDepth (a cycle is infinitely deep), expanding to more than
// kMaxPickleWriteValues values, or holding an object (kObject: never
// written, a weights-only file has none).
absl::StatusOr<std::string> WritePickle(const PickleValue& value);

}  // namespace gradsync
