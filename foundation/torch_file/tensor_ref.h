// Tensors as torch.save pickles them, read from a PickleTree without
// LibTorch: the call torch._utils._rebuild_tensor_v2(storage, offset, size,
// stride, requires_grad, hooks) whose storage is the persistent id
// ('storage', torch.<Type>Storage, key, location, numel) naming the record
// data/<key> of the archive. Shared by the snapshot export
// (state_dict_export.h) and the tensor-file reader (tensor_file.h).
//
// Nodes are hostile: anything not of this shape is INVALID_ARGUMENT saying
// what was found (callers add where). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "foundation/torch_file/pickle_tree.h"

namespace gradsync {

inline constexpr absl::string_view kRebuildTensor =
    "torch._utils _rebuild_tensor_v2";
inline constexpr absl::string_view kRebuildParameter =
    "torch._utils _rebuild_parameter";

// A storage class both weights-only loaders accept.
struct StorageType {
  absl::string_view global;  // "torch FloatStorage", as GLOBAL spells it
  absl::string_view dtype;   // "float32"
  int element_size = 0;      // bytes
};

// torch.save's layout is <archive>/data.pkl beside <archive>/data/<key>:
// "<archive>/" when `record` is such a data.pkl, empty otherwise.
std::string ArchiveFolderOf(absl::string_view record);

// The storage class `global` names, or null when it is not one.
const StorageType* FindStorageType(absl::string_view global);

// The globals a weights-only file may name: the two rebuild functions,
// collections.OrderedDict and the storage classes.
bool IsWeightsOnlyGlobal(absl::string_view global);

struct StorageRef {
  std::string key;  // the record data/<key>: letters, digits, '_'
  const StorageType* type = nullptr;
  int64_t numel = 0;  // as declared, >= 0
};

// A kPersistentId node.
absl::StatusOr<StorageRef> ParseStorageRef(const PickleValue& persistent_id);

struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;  // elements into the storage
  std::vector<int64_t> sizes, strides;
  // The elements the sizes hold; INT64_MAX where the product overflows.
  int64_t numel() const;
  // Row-major without gaps (torch's is_contiguous(); size-1 dimensions'
  // strides do not matter).
  bool contiguous() const;
};

// A kCall node of _rebuild_tensor_v2.
absl::StatusOr<TensorRef> ParseTensorRef(const PickleValue& call);

}  // namespace gradsync
