#include "worker/comm/communicator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "foundation/store/rendezvous_keys.h"

namespace gradsync {

const char* BackendName(Backend backend) {
  return backend == Backend::kNccl ? "nccl" : "gloo";
}

namespace {

// A collective that already ran.
class DoneWork : public Work {
 public:
  DoneWork(absl::Status status, double ms)
      : status_(std::move(status)), ms_(ms) {}
  absl::Status Wait() override { return status_; }
  double elapsed_ms() const override { return ms_; }

 private:
  const absl::Status status_;
  const double ms_;
};

}  // namespace

std::unique_ptr<Work> Communicator::AllReduceAsync(at::Tensor tensor,
                                                   ReduceOp op) {
  const absl::Time start = absl::Now();
  absl::Status s = AllReduce(tensor, op);
  return std::make_unique<DoneWork>(
      std::move(s), absl::ToDoubleMilliseconds(absl::Now() - start));
}

void Communicator::Abort() {
  if (aborted_.exchange(true)) return;
  AbortTransport();
}

absl::Status Communicator::CollectiveError(const std::string& op, int64_t seq,
                                           const absl::Status& cause) {
  if (aborted_) {
    return absl::AbortedError(absl::StrFormat(
        "%s #%d (%s, rank %d of %d) aborted: the attempt was ended (%s)", op,
        seq, BackendName(backend()), rank_, size_, cause.message()));
  }
  (void)store_->Set(rendezvous_keys::Arrived(seq, rank_), "1");
  // Other live ranks time out at about the same moment; give them a grace
  // to mark their arrival before naming the ones that did not.
  const absl::Duration grace =
      std::clamp(timeout_ / 4, absl::Seconds(1), absl::Seconds(10));
  const absl::Time deadline = absl::Now() + grace;
  std::vector<int> missing;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    if (!store_->Get(rendezvous_keys::Arrived(seq, r), left).ok())
      missing.push_back(r);
  }
  const bool timed_out = absl::IsDeadlineExceeded(cause);
  std::string who = missing.empty()
                        ? "every rank reached it"
                        : absl::StrCat("rank(s) ", absl::StrJoin(missing, ", "),
                                       " did not arrive");
  const std::string message = absl::StrFormat(
      "%s #%d (%s, rank %d of %d) %s after %s: %s (%s)", op, seq,
      BackendName(backend()), rank_, size_, timed_out ? "timed out" : "failed",
      absl::FormatDuration(timeout_), who, cause.message());
  return timed_out ? absl::DeadlineExceededError(message)
                   : absl::UnavailableError(message);
}

}  // namespace gradsync
