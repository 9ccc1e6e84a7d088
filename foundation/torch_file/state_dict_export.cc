#include "foundation/torch_file/state_dict_export.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "foundation/torch_file/pickle_tree.h"
#include "foundation/torch_file/stored_zip.h"
#include "foundation/torch_file/tensor_ref.h"

namespace gradsync {
namespace {

using Kind = PickleValue::Kind;

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("snapshot is not a weights-only state_dict: ", what));
}

absl::Status Refused(const std::string& global) {
  return Bad(absl::StrCat("it names ", global,
                          ", which the weights-only loader refuses"));
}

struct Storage {
  int element_size = 0;
  int64_t numel = 0;
};

// Every value under `model` (each once): every global must be allowed,
// every persistent id a storage reference, recorded in `storages`.
absl::Status Check(const PickleValue& model,
                   std::map<std::string, Storage>& storages) {
  return VisitPickle(model, [&storages](const PickleValue& v) {
    if (v.kind == Kind::kGlobal && !IsWeightsOnlyGlobal(v.text)) {
      return Refused(v.text);
    }
    if (v.kind == Kind::kPersistentId) {
      absl::StatusOr<StorageRef> ref = ParseStorageRef(v);
      if (!ref.ok()) return Bad(ref.status().message());
      Storage& s = storages[ref->key];
      s.element_size = ref->type->element_size;
      s.numel = std::max(s.numel, ref->numel);
    }
    return absl::OkStatus();
  });
}

// The "model" entry of the snapshot's top-level dict.
absl::StatusOr<const PickleValue*> ModelEntry(const PickleValue& root) {
  if (root.kind != Kind::kDict) return Bad("its pickle is not a dict");
  if (const PickleValue* model = FindStringKey(root, "model")) return model;
  return Bad("it has no \"model\" entry");
}

// Each entry of the state_dict must be name -> tensor.
absl::StatusOr<int64_t> CountTensors(const PickleValue& model) {
  if (model.kind != Kind::kDict) return Bad("\"model\" is not a dict");
  int64_t tensors = 0;
  for (size_t i = 0; i + 1 < model.items.size(); i += 2) {
    const PickleValue& key = *model.items[i];
    const PickleValue& value = *model.items[i + 1];
    if (key.kind != Kind::kString)
      return Bad("a state_dict key is not a string");
    const bool tensor = value.kind == Kind::kCall &&
                        (value.items[0]->text == kRebuildTensor ||
                         value.items[0]->text == kRebuildParameter);
    if (!tensor) {
      return Bad(absl::StrCat("\"", key.text, "\" is not a tensor"));
    }
    ++tensors;
  }
  return tensors;
}

}  // namespace

absl::StatusOr<StateDictFile> ExportStateDict(absl::string_view snapshot) {
  absl::StatusOr<std::vector<ZipRecord>> records = ReadStoredZip(snapshot);
  if (!records.ok()) return records.status();
  // torch.save's layout: <archive>/data.pkl and <archive>/data/<key>.
  std::map<std::string, absl::string_view> by_name;
  std::string prefix;
  for (const ZipRecord& r : *records) {
    by_name[r.name] = r.data;
    if (std::string folder = ArchiveFolderOf(r.name); !folder.empty()) {
      prefix = std::move(folder);
    }
  }
  if (prefix.empty()) return Bad("no <archive>/data.pkl record");
  absl::string_view pickle = by_name[prefix + "data.pkl"];
  if (pickle.size() > kMaxSnapshotPickleBytes) {
    return Bad(absl::StrCat("data.pkl is ", pickle.size(), " bytes (at most ",
                            kMaxSnapshotPickleBytes, ")"));
  }
  absl::StatusOr<std::unique_ptr<PickleTree>> tree = ParsePickle(pickle);
  if (!tree.ok()) return Bad(tree.status().message());
  absl::StatusOr<const PickleValue*> model = ModelEntry((*tree)->root());
  if (!model.ok()) return model.status();
  absl::StatusOr<int64_t> tensors = CountTensors(**model);
  if (!tensors.ok()) return tensors.status();
  std::map<std::string, Storage> storages;
  if (absl::Status s = Check(**model, storages); !s.ok()) return s;
  absl::StatusOr<std::string> state_dict = WritePickle(**model);
  if (!state_dict.ok()) return Bad(state_dict.status().message());

  StateDictFile out;
  out.tensors = *tensors;
  std::vector<ZipRecord> written = {{"archive/data.pkl", *state_dict},
                                    {"archive/byteorder", "little"}};
  for (const auto& [key, storage] : storages) {
    auto it = by_name.find(absl::StrCat(prefix, "data/", key));
    if (it == by_name.end()) {
      return Bad(absl::StrCat("storage record data/", key, " is missing"));
    }
    const uint64_t needed = static_cast<uint64_t>(storage.numel) *
                            static_cast<uint64_t>(storage.element_size);
    if (it->second.size() < needed) {
      return Bad(absl::StrCat("storage record data/", key, " holds ",
                              it->second.size(), " bytes, its tensor needs ",
                              needed));
    }
    out.storage_bytes += static_cast<int64_t>(it->second.size());
    written.push_back({absl::StrCat("archive/data/", key), it->second});
  }
  written.push_back({"archive/version", "3\n"});
  absl::StatusOr<std::string> zip = WriteStoredZip(written);
  if (!zip.ok()) return zip.status();
  out.bytes = std::move(*zip);
  return out;
}

}  // namespace gradsync
