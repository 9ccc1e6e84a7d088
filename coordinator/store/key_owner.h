// Which rank may write a rendezvous store key. Communicators bootstrap
// through keys that one rank writes and the others trust (its address, its
// "arrived" mark, NCCL's unique id from rank 0); if any rank could write
// them, one rank could point its peers' connections elsewhere. Keys that
// end in a rank number ("<...>/3", "<...>_3") belong to that rank, and
// "<...>nccl/unique_id" to rank 0; other keys are anyone's.
// Thread safety: pure functions.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"

namespace gradsync {

// The rank that owns `key`, or nullopt when any rank may write it.
std::optional<int> KeyOwner(absl::string_view key);

}  // namespace gradsync
