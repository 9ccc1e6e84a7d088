// When a worker is dead and when a running job is stalled, as rules over
// plain inputs; the Coordinator's failure detector (failure_detector.cc)
// gathers the inputs under its lock and acts on the answers.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gradsync {

enum class Silence {
  kAlive,   // heard from within the heartbeat timeout
  kDead,    // silent past it: declare the worker dead
  kForget,  // dead long enough to drop from `gradsync workers`
};

// A worker silent for `silent` (since its last heartbeat). A dead worker
// stays listed for 20 heartbeat timeouts plus a minute.
Silence JudgeSilence(absl::Duration silent, absl::Duration heartbeat_timeout,
                     bool already_dead);

// One rank of a running job as its heartbeats describe it.
struct RankProgress {
  int rank = 0;
  std::string worker_id, host;
  int64_t collective_seq = 0;  // the last collective it entered
  int64_t step = 0;
  absl::Duration at_seq_for;  // how long it has been at that collective
};

struct Stall {
  // "rank 2 (worker W on host H, at #7, step 3) has not reached collective
  // #8 that rank(s) 0, 1 have waited in for 12.0 s"; empty: no stall.
  std::string text;
  // The text without the time waited: a new key is a new stall (an event).
  std::string key;
};

// A stall: ranks at the front collective (the highest sequence number any
// rank entered) have waited there for `patience` or longer, while other
// ranks, also unchanged for `patience`, have not reached it. A rank that
// moved within `patience` is neither.
Stall FindStall(const std::vector<RankProgress>& ranks,
                absl::Duration patience);

}  // namespace gradsync
