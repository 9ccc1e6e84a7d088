// Text from workers and users that the coordinator stores (completion
// messages, failure reasons, cancel reasons, log lines), cut to a bound so
// that no caller can grow a job's record, its history and every listing
// that carries it. Cuts fall between UTF-8 characters: a cut inside one
// would leave a string protobuf refuses to send.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// Completion messages and the errors they carry.
inline constexpr size_t kMaxMessageBytes = 4096;
// Reasons a user gives (cancel).
inline constexpr size_t kMaxReasonBytes = 1024;

// `text`, or its first at most `max_bytes` bytes ending at a character
// boundary.
std::string CutAtCharacter(absl::string_view text, size_t max_bytes);

// `text` whole when it fits; otherwise cut (CutAtCharacter) and ending in
// " ... (N more bytes)", so a reader knows it was cut.
std::string Bounded(absl::string_view text, size_t max_bytes);

}  // namespace gradsync
