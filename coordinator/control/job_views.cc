#include "coordinator/control/job_views.h"

#include <utility>

namespace gradsync {
namespace {

// Keeps the newest `keep` elements of `field`, in order.
template <typename Repeated>
void KeepNewest(Repeated* field, int keep) {
  const int drop = field->size() - keep;
  if (drop > 0) field->DeleteSubrange(0, drop);
}

}  // namespace

v1::Job Abridged(v1::Job job) {
  job.clear_ledger();
  KeepNewest(job.mutable_transitions(), kAbridgedTransitions);
  KeepNewest(job.mutable_attempts(), kAbridgedAttempts);
  job.set_abridged(true);
  return job;
}

}  // namespace gradsync
