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
  if (name.size() > max_name_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("barrier name is ", name.size(), " bytes, more than ",
                     max_name_bytes_));
  }
  absl::MutexLock lock(&mu_);
  if (!closed_.ok()) return closed_;
  if (arrived_.size() >= max_barriers_ && arrived_.count(name) == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("barrier '", name, "': this job attempt already has ",
                     arrived_.size(), " barriers, the most it may have"));
  }
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
