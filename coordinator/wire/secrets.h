// The secrets on the coordinator's wire, as both ends see them: tokens
// (users and workers each have one; a call carries
// "authorization: Bearer <token>"), token files, and a registered worker's
// own key (metadata kWorkerKeyHeader). The server checks them
// (coordinator/server/auth.h); clients send them
// (coordinator/client/channel.h). Secrets are never logged.
// Thread safety: free functions.
#pragma once

#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// Metadata carrying a registered worker's own key (RegisterWorkerResponse.
// worker_key), which binds its calls to its worker id (Coordinator::
// AuthorizeWorker); the worker token only proves the caller is some worker.
inline constexpr char kWorkerKeyHeader[] = "gradsync-worker-key";

// Equal secrets, compared in time that depends only on their lengths.
bool KeysEqual(absl::string_view a, absl::string_view b);

// `text` with every occurrence of each non-empty secret replaced by
// "[redacted]": for text that others will read (a task's log lines).
std::string RedactSecrets(std::string text,
                          std::initializer_list<absl::string_view> secrets);

// A token given either as a value (flag or environment) or as a file whose
// contents, without trailing whitespace, are the token. Both empty: "" (no
// token). Both set: INVALID_ARGUMENT. An unreadable file: NOT_FOUND; an
// empty one: INVALID_ARGUMENT. A token is at least 8 printable ASCII
// characters, none a space (INVALID_ARGUMENT otherwise: "  " is no token).
// `what` names the option in messages.
absl::StatusOr<std::string> LoadToken(const std::string& value,
                                      const std::string& file,
                                      const std::string& what);

}  // namespace gradsync
