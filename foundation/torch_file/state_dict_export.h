// A snapshot's model weights as a file PyTorch's weights-only loader opens:
// `torch.load(f, weights_only=True)` on PyTorch 1.13 (whose loader refuses
// the floats a full snapshot holds: learning rate, betas) and on 2.x.
//
// The snapshot (worker/model/checkpoint.h) is a torch.save zip whose pickle
// is a dict with a "model" entry, the module's state_dict. The export is a
// new torch.save zip holding only that state_dict: names mapped to tensors
// rebuilt by torch._utils._rebuild_tensor_v2 from their storages, the
// storages copied as they are. Nothing in it names code beyond the globals
// both loaders allow.
//
// The snapshot is checked as hostile: a pickle outside the weights-only
// subset, a global outside the allowed list, a storage record missing or
// shorter than its tensor needs, are INVALID_ARGUMENT naming the problem.
// Thread-compatible (a plain function).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// The largest data.pkl read (a state_dict's pickle is ~150 bytes a tensor;
// the tensors' bytes live in storage records, which have no cap).
inline constexpr size_t kMaxSnapshotPickleBytes = 8 << 20;

struct StateDictFile {
  std::string bytes;  // the torch.save zip
  int64_t tensors = 0;
  int64_t storage_bytes = 0;
};

absl::StatusOr<StateDictFile> ExportStateDict(absl::string_view snapshot);

}  // namespace gradsync
