// How the gloo backend turns gloo's exceptions into Status values. gloo
// signals an expired wait only in the text of its IoException ("Timed out
// ..."), so this is the one place that reads it: above the backend a
// timeout is DEADLINE_EXCEEDED and any other transport failure (a peer
// closed its connection) UNAVAILABLE. Header-only; thread-safe.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"

namespace gradsync {

inline absl::Status GlooError(const std::exception& e) {
  const std::string what = e.what();
  for (const char* word : {"Timed out", "timed out", "Timeout", "timeout"}) {
    if (what.find(word) != std::string::npos) {
      return absl::DeadlineExceededError(what);
    }
  }
  return absl::UnavailableError(what);
}

}  // namespace gradsync
