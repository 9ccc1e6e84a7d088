// Which rank may write a rendezvous store key. Communicators bootstrap
// through keys that one rank writes and the others trust (its address, its
// "arrived" mark, rank 0's NCCL unique id and shared-memory segment); if any
// rank could write them, one rank could point its peers' connections
// elsewhere. The names and their owners are in
// foundation/store/rendezvous_keys.h: keys that end in a rank number
// ("<...>/3", "<...>_3") belong to that rank, the rank-0 keys to rank 0;
// other keys are anyone's.
// Thread safety: pure functions.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"

namespace gradsync {

// The rank that owns `key`, or nullopt when any rank may write it.
std::optional<int> KeyOwner(absl::string_view key);

}  // namespace gradsync
