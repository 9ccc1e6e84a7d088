// Tensor files (foundation/torch_file/tensor_file.h) made without LibTorch
// or Python, laid out as torch.save writes them (a stored zip: t/data.pkl,
// t/data/<key>, t/version), with whatever a test wants wrong in them:
// shapes, strides or a declared size that the bytes do not back, another
// storage class, an extra entry naming a foreign global.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "foundation/torch_file/pickle_tree.h"
#include "foundation/torch_file/stored_zip.h"

namespace gradsync::testing {

struct FakeTensor {
  std::string storage = "torch FloatStorage";  // the GLOBAL of its storage
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // empty: row-major for `sizes`
  int64_t offset = 0;
  std::string bytes;  // its storage record
};

template <typename T>
FakeTensor MakeFakeTensor(const std::string& storage,
                          const std::vector<T>& values,
                          std::vector<int64_t> sizes) {
  FakeTensor t;
  t.storage = storage;
  t.sizes = std::move(sizes);
  t.bytes.resize(values.size() * sizeof(T));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

struct FakeTensorFile {
  std::map<std::string, FakeTensor> tensors;  // by dict key: "x", "y"
  // When set, one more entry "extra" whose value calls this global
  // ("os system").
  std::string foreign_global;
};

inline std::string MakeTensorFile(const FakeTensorFile& file) {
  using Kind = PickleValue::Kind;
  PickleTree tree;
  auto node = [&tree](Kind kind) { return tree.Add(kind); };
  auto text = [&](Kind kind, const std::string& s) {
    PickleValue* v = node(kind);
    v->text = s;
    return v;
  };
  auto integer = [&](int64_t i) {
    PickleValue* v = node(Kind::kInt);
    v->integer = i;
    return v;
  };
  auto ints = [&](const std::vector<int64_t>& values) {
    PickleValue* v = node(Kind::kTuple);
    for (int64_t i : values) v->items.push_back(integer(i));
    return v;
  };
  auto call = [&](const std::string& global) {
    PickleValue* v = node(Kind::kCall);
    v->items = {text(Kind::kGlobal, global), node(Kind::kTuple)};
    return v;
  };
  PickleValue* root = node(Kind::kDict);
  std::vector<ZipRecord> records;
  std::vector<std::string> names;  // records' names outlive the loop
  int key = 0;
  for (const auto& [name, t] : file.tensors) {
    std::vector<int64_t> strides = t.strides;
    if (strides.empty()) {
      strides.assign(t.sizes.size(), 1);
      for (size_t i = t.sizes.size(); i-- > 1;) {
        strides[i - 1] = strides[i] * t.sizes[i];
      }
    }
    const int element = t.storage == "torch LongStorage"   ? 8
                        : t.storage == "torch ByteStorage" ? 1
                                                           : 4;
    PickleValue* id = node(Kind::kTuple);
    id->items = {text(Kind::kString, "storage"), text(Kind::kGlobal, t.storage),
                 text(Kind::kString, std::to_string(key)),
                 text(Kind::kString, "cpu"),
                 integer(static_cast<int64_t>(t.bytes.size()) / element)};
    PickleValue* persistent = node(Kind::kPersistentId);
    persistent->items = {id};
    PickleValue* args = node(Kind::kTuple);
    PickleValue* no_grad = node(Kind::kBool);
    args->items = {persistent,    integer(t.offset),
                   ints(t.sizes), ints(strides),
                   no_grad,       call("collections OrderedDict")};
    PickleValue* tensor = node(Kind::kCall);
    tensor->items = {text(Kind::kGlobal, "torch._utils _rebuild_tensor_v2"),
                     args};
    root->items.push_back(text(Kind::kString, name));
    root->items.push_back(tensor);
    names.push_back(absl::StrCat("t/data/", key++));
  }
  if (!file.foreign_global.empty()) {
    root->items.push_back(text(Kind::kString, "extra"));
    root->items.push_back(call(file.foreign_global));
  }
  const std::string pickle = WritePickle(*root).value();
  records.push_back({"t/data.pkl", pickle});
  int i = 0;
  for (const auto& [name, t] : file.tensors) {
    records.push_back({names[i++], t.bytes});
  }
  records.push_back({"t/version", "3\n"});
  return WriteStoredZip(records).value();
}

}  // namespace gradsync::testing
