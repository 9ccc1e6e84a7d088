#include "foundation/torch_file/tensor_file.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "foundation/torch_file/pickle_tree.h"
#include "foundation/torch_file/stored_zip.h"
#include "foundation/torch_file/tensor_ref.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tensor file: ", what));
}

std::string Shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// Every global of the pickle is one a weights-only file may name.
absl::Status CheckGlobals(const PickleValue& root) {
  return VisitPickle(root, [](const PickleValue& v) {
    if (v.kind == Kind::kGlobal && !IsWeightsOnlyGlobal(v.text)) {
      return Bad(absl::StrCat("its pickle names the global '", v.text,
                              "'; a tensor file holds only tensors"));
    }
    return absl::OkStatus();
  });
}

// LibTorch's torch::pickle_save wraps a typed dict in
// torch.jit._pickle.restore_type_tag(dict, "Dict[str, Tensor]"), which
// only annotates it: the dict.
const PickleValue& UnwrapTypeTag(const PickleValue& root) {
  if (root.kind == Kind::kCall && root.items[0]->kind == Kind::kGlobal &&
      root.items[0]->text == "torch.jit._pickle restore_type_tag" &&
      root.items[1]->kind == Kind::kTuple && root.items[1]->items.size() == 2 &&
      root.items[1]->items[1]->kind == Kind::kString) {
    return *root.items[1]->items[0];
  }
  return root;
}

// `name` ("x" or "y") from the dict, of one of `dtypes`, its elements
// within its storage record.
absl::StatusOr<TensorFileArray> Array(
    const PickleValue& dict, absl::string_view name,
    const std::vector<absl::string_view>& dtypes,
    const std::map<std::string, const ZipEntry*>& records,
    const std::string& prefix) {
  const PickleValue* value = FindStringKey(dict, name);
  if (value == nullptr) {
    return Bad(absl::StrCat("no \"", name,
                            "\" entry; save torch.save({\"x\": X, \"y\": Y}, "
                            "path)"));
  }
  absl::StatusOr<TensorRef> ref = ParseTensorRef(*value);
  if (!ref.ok()) {
    return Bad(absl::StrCat("\"", name, "\": ", ref.status().message()));
  }
  TensorFileArray a;
  a.dtype = ref->storage.type->dtype;
  a.element_size = ref->storage.type->element_size;
  a.shape = ref->sizes;
  if (std::find(dtypes.begin(), dtypes.end(), a.dtype) == dtypes.end()) {
    return Bad(absl::StrCat(name, " is ", a.dtype, "; it must be ",
                            absl::StrJoin(dtypes, " or ")));
  }
  if (a.shape.empty() || a.shape[0] < 1) {
    return Bad(absl::StrCat(name, " has shape ", Shape(a.shape),
                            "; its first dimension counts the samples"));
  }
  if (!ref->contiguous()) {
    return Bad(absl::StrCat(name, " is not contiguous (stride ",
                            Shape(ref->strides), " for shape ", Shape(a.shape),
                            "); save ", name, ".contiguous()"));
  }
  auto record = records.find(absl::StrCat(prefix, "data/", ref->storage.key));
  if (record == records.end()) {
    return Bad(absl::StrCat(name, "'s storage record data/", ref->storage.key,
                            " is missing"));
  }
  a.record = record->second->name;
  a.record_data = record->second->data;
  a.record_crc = record->second->crc;
  // (offset + numel) * element_size within the record, without overflow:
  // numel saturates, and the record is at most the archive's size.
  const uint64_t held = a.record_data.size() / a.element_size;
  const int64_t numel = ref->numel();
  if (static_cast<uint64_t>(ref->offset) > held ||
      static_cast<uint64_t>(numel) > held - ref->offset) {
    return Bad(absl::StrCat(name, " has shape ", Shape(a.shape), " (", numel,
                            " elements from offset ", ref->offset,
                            ") but its storage record ", a.record, " holds ",
                            a.record_data.size(), " bytes"));
  }
  a.bytes = a.record_data.substr(ref->offset * a.element_size,
                                 numel * a.element_size);
  return a;
}

}  // namespace

absl::StatusOr<TensorFileLayout> ReadTensorFileLayout(
    absl::string_view archive) {
  absl::StatusOr<std::vector<ZipEntry>> entries = ListZipEntries(archive);
  if (!entries.ok()) {
    return Bad(
        absl::StrCat("not a torch.save file: ", entries.status().message()));
  }
  std::map<std::string, const ZipEntry*> records;
  std::string prefix;
  for (const ZipEntry& e : *entries) {
    if (e.method != 0) {
      return Bad(absl::StrCat("record ", e.name,
                              " is compressed; torch.save stores records as "
                              "they are"));
    }
    records[e.name] = &e;
    if (std::string folder = ArchiveFolderOf(e.name); !folder.empty()) {
      prefix = std::move(folder);
    }
  }
  if (prefix.empty()) return Bad("no <archive>/data.pkl record");
  if (auto order = records.find(prefix + "byteorder");
      order != records.end() && order->second->data != "little") {
    return Bad("its tensors are not little-endian");
  }
  const absl::string_view pickle = records[prefix + "data.pkl"]->data;
  if (pickle.size() > kMaxTensorFilePickleBytes) {
    return Bad(absl::StrCat("data.pkl is ", pickle.size(), " bytes (at most ",
                            kMaxTensorFilePickleBytes, ")"));
  }
  absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(pickle);
  if (!tree.ok()) return Bad(tree.status().message());
  const PickleValue& root = UnwrapTypeTag((*tree)->root());
  if (absl::Status s = CheckGlobals(root); !s.ok()) return s;
  if (root.kind != Kind::kDict) {
    return Bad(
        "its pickle is not a dict; save torch.save({\"x\": X, \"y\": "
        "Y}, path)");
  }
  TensorFileLayout layout;
  absl::StatusOr<TensorFileArray> x =
      Array(root, "x", {"uint8", "float32"}, records, prefix);
  if (!x.ok()) return x.status();
  absl::StatusOr<TensorFileArray> y =
      Array(root, "y", {"int64", "float32"}, records, prefix);
  if (!y.ok()) return y.status();
  if (x->shape[0] != y->shape[0]) {
    return Bad(absl::StrCat("x holds ", x->shape[0], " samples and y ",
                            y->shape[0], "; one target per sample"));
  }
  if (y->dtype == "int64" && y->shape.size() != 1) {
    return Bad(absl::StrCat("y is int64 of shape ", Shape(y->shape),
                            "; class indices are one per sample, [N]"));
  }
  layout.samples = x->shape[0];
  layout.x = *std::move(x);
  layout.y = *std::move(y);
  return layout;
}

absl::Status VerifyTensorFileData(const TensorFileLayout& layout) {
  for (const TensorFileArray* a : {&layout.x, &layout.y}) {
    if (Crc32(a->record_data) != a->record_crc) {
      return absl::DataLossError(absl::StrCat(
          "tensor file: record ", a->record,
          " does not match its CRC-32 (the file is damaged or was changed "
          "while it was read)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
