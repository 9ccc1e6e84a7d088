// Whether a job's checkpoint paths can work on its workers, judged at
// submit the way every worker judges them (worker/agent/task.cc): a
// relative checkpoint.directory or resume_from is taken under each
// worker's checkpoint root, an absolute one must lie inside it. The
// coordinator sees no worker's file system, so the check is lexical and
// refuses only what every registered worker would refuse; a worker still
// resolves links itself when the task starts.
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync {

// `worker_roots`: the absolute checkpoint roots of the registered live
// workers ("" for a worker that did not say; then absolute paths are left
// to the workers). INVALID_ARGUMENT for a relative path that climbs out of
// the root ("../x"); FAILED_PRECONDITION for an absolute path outside every
// root, naming the roots.
absl::Status CheckCheckpointPaths(const v1::JobSpec& spec,
                                  const std::vector<std::string>& worker_roots);

}  // namespace gradsync
