#include "coordinator/control/barrier.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {

absl::Status BarrierTable::Arrive(const std::string& name, int rank,
                                  absl::Time deadline) {
  if (rank < 0 || rank >= world_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("barrier '", name, "': rank must be in [0, ", world_size_,
                     ") (got ", rank, ")"));
  }
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  std::set<int>& arrived = arrived_[name];
  arrived.insert(rank);
  auto released = [this, &arrived]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !closed_.ok() || static_cast<int>(arrived.size()) == world_size_;
  };
  mu_.AwaitWithDeadline(absl::Condition(&released), deadline);
  if (!closed_.ok()) return closed_;
  if (static_cast<int>(arrived.size()) == world_size_) return absl::OkStatus();
  std::vector<int> missing;
  for (int r = 0; r < world_size_; ++r) {
    if (arrived.count(r) == 0) missing.push_back(r);
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "barrier '", name, "' timed out: ", arrived.size(), " of ", world_size_,
      " ranks arrived; waiting for rank(s) ", absl::StrJoin(missing, ", ")));
}

void BarrierTable::Close(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (closed_.ok()) closed_ = std::move(status);
}

}  // namespace gradsync
