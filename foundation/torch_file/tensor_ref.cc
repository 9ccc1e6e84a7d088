#include "foundation/torch_file/tensor_ref.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;

// A dimension or offset larger than this is refused (4 TiB of float32).
constexpr int64_t kMaxDimension = int64_t{1} << 40;

constexpr StorageType kStorageTypes[] = {
    {"torch DoubleStorage", "float64", 8},
    {"torch FloatStorage", "float32", 4},
    {"torch HalfStorage", "float16", 2},
    {"torch BFloat16Storage", "bfloat16", 2},
    {"torch LongStorage", "int64", 8},
    {"torch IntStorage", "int32", 4},
    {"torch ShortStorage", "int16", 2},
    {"torch CharStorage", "int8", 1},
    {"torch ByteStorage", "uint8", 1},
    {"torch BoolStorage", "bool", 1}};

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

absl::StatusOr<std::vector<int64_t>> IntTuple(const PickleValue& v,
                                              absl::string_view what) {
  if (v.kind != Kind::kTuple) return Bad(absl::StrCat(what, " is not a tuple"));
  if (v.items.size() > 16) {
    return Bad(absl::StrCat(what, " has ", v.items.size(),
                            " dimensions (at most 16)"));
  }
  std::vector<int64_t> out;
  for (const PickleValue* item : v.items) {
    if (item->kind != Kind::kInt || item->integer < 0 ||
        item->integer > kMaxDimension) {
      return Bad(absl::StrCat(what,
                              " holds something other than an integer "
                              "in [0, 2^40]"));
    }
    out.push_back(item->integer);
  }
  return out;
}

}  // namespace

std::string ArchiveFolderOf(absl::string_view record) {
  const size_t slash = record.find('/');
  if (slash == absl::string_view::npos || slash == 0 ||
      record.substr(slash) != "/data.pkl") {
    return "";
  }
  return std::string(record.substr(0, slash + 1));
}

const StorageType* FindStorageType(absl::string_view global) {
  for (const StorageType& t : kStorageTypes) {
    if (t.global == global) return &t;
  }
  return nullptr;
}

bool IsWeightsOnlyGlobal(absl::string_view global) {
  return global == kRebuildTensor || global == kRebuildParameter ||
         global == "collections OrderedDict" ||
         FindStorageType(global) != nullptr;
}

absl::StatusOr<StorageRef> ParseStorageRef(const PickleValue& persistent_id) {
  const PickleValue& id = *persistent_id.items[0];
  if (id.kind != Kind::kTuple || id.items.size() != 5 ||
      id.items[0]->kind != Kind::kString || id.items[0]->text != "storage" ||
      id.items[1]->kind != Kind::kGlobal ||
      id.items[2]->kind != Kind::kString ||
      id.items[3]->kind != Kind::kString || id.items[4]->kind != Kind::kInt) {
    return Bad(
        "a persistent id that is not ('storage', type, key, location, numel)");
  }
  StorageRef ref;
  ref.key = id.items[2]->text;
  if (ref.key.empty() || ref.key.size() > 32 ||
      !std::all_of(ref.key.begin(), ref.key.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
      })) {
    return Bad(
        absl::StrCat("storage key '", ref.key, "' is not a record name"));
  }
  ref.type = FindStorageType(id.items[1]->text);
  if (ref.type == nullptr) {
    return Bad(absl::StrCat("it names ", id.items[1]->text,
                            ", which the weights-only loader refuses"));
  }
  ref.numel = id.items[4]->integer;
  if (ref.numel < 0) {
    return Bad(absl::StrCat("storage ", ref.key, " has numel ", ref.numel));
  }
  return ref;
}

int64_t TensorRef::numel() const {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (n > std::numeric_limits<int64_t>::max() / s) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= s;
  }
  return n;
}

bool TensorRef::contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

absl::StatusOr<TensorRef> ParseTensorRef(const PickleValue& call) {
  if (call.kind != Kind::kCall || call.items[0]->kind != Kind::kGlobal ||
      call.items[0]->text != kRebuildTensor) {
    return Bad("not a tensor (torch._utils._rebuild_tensor_v2)");
  }
  const PickleValue& args = *call.items[1];
  if (args.kind != Kind::kTuple || args.items.size() < 4 ||
      args.items[0]->kind != Kind::kPersistentId ||
      args.items[1]->kind != Kind::kInt) {
    return Bad(
        "a tensor whose arguments are not (storage, offset, size, "
        "stride, ...)");
  }
  TensorRef ref;
  absl::StatusOr<StorageRef> storage = ParseStorageRef(*args.items[0]);
  if (!storage.ok()) return storage.status();
  ref.storage = *std::move(storage);
  ref.offset = args.items[1]->integer;
  if (ref.offset < 0 || ref.offset > kMaxDimension) {
    return Bad(absl::StrCat("a tensor at storage offset ", ref.offset));
  }
  absl::StatusOr<std::vector<int64_t>> sizes = IntTuple(*args.items[2], "size");
  if (!sizes.ok()) return sizes.status();
  absl::StatusOr<std::vector<int64_t>> strides =
      IntTuple(*args.items[3], "stride");
  if (!strides.ok()) return strides.status();
  if (sizes->size() != strides->size()) {
    return Bad("a tensor whose size and stride differ in length");
  }
  ref.sizes = *std::move(sizes);
  ref.strides = *std::move(strides);
  return ref;
}

}  // namespace gradsync
