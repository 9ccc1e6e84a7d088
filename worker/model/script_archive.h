// CheckScriptArchive: what a TorchScript file (torch.jit.save's zip) must
// pass before torch::jit::load may open it. A model file is code a user
// uploaded, and PyTorch has no safe mode for loading one: LibTorch runs a
// module's __setstate__ while loading, resolves the classes its pickles
// name, and inflates whatever the archive declares. So before LibTorch
// reads a byte of it:
//   - sizes: at most max_entries entries, each stored or deflated, each
//     inflating to at most max_entry_bytes (code files and pickles:
//     max_code_bytes), max_total_bytes in all, and no deflated entry
//     claiming a ratio no deflate stream reaches: a zip bomb is refused from
//     its directory, before anything inflates;
//   - format: LibTorch's own serialization reader opens it, every entry under
//     one top folder, and its file format version is one this LibTorch
//     reads (else FAILED_PRECONDITION naming both versions);
//   - code: no code file defines __setstate__ or __getstate__ (run while
//     loading) or names torch.classes (native objects);
//   - pickles (data.pkl, constants.pkl and the debug pickles): every global
//     they name is one a plain module needs: tensor and storage rebuilding,
//     OrderedDict, TorchScript's list builders, and the module classes the
//     archive's own code defines (never __torch__.torch.classes).
// What a module's methods do once loaded is checked by the op allowlist
// after loading (not here). Errors name the entry and the reason
// (INVALID_ARGUMENT unless said otherwise).
// Thread safety: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync {

struct ScriptArchiveLimits {
  size_t max_entries = 100000;
  uint64_t max_entry_bytes = uint64_t{4} << 30;
  uint64_t max_code_bytes = 16 << 20;  // each code file or pickle
  uint64_t max_total_bytes = uint64_t{8} << 30;
};

absl::Status CheckScriptArchive(absl::string_view archive,
                                const ScriptArchiveLimits& limits = {});

}  // namespace gradsync
