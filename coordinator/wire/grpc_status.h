// Conversions between absl::Status (module boundaries) and grpc::Status (the
// wire), and the deadline of a blocking RPC. Header-only; thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gradsync {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      s.error_message());
}

// Moves a StatusOr's value into `response`, or returns its error.
template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = std::move(*result);
  return grpc::Status::OK;
}

// The earliest of now + timeout_ms, now + max_wait and the client's deadline.
inline absl::Time WaitDeadline(const grpc::ServerContextBase& context,
                               int64_t timeout_ms, absl::Duration max_wait) {
  const absl::Time now = absl::Now();
  absl::Time deadline =
      now +
      std::min(absl::Milliseconds(std::max<int64_t>(timeout_ms, 0)), max_wait);
  const auto client = context.deadline();
  if (client != std::chrono::system_clock::time_point::max()) {
    deadline = std::min(deadline, absl::FromChrono(client));
  }
  return deadline;
}

// The same bound as a duration from now (never negative).
inline absl::Duration WaitTimeout(const grpc::ServerContextBase& context,
                                  int64_t timeout_ms, absl::Duration max_wait) {
  return std::max(WaitDeadline(context, timeout_ms, max_wait) - absl::Now(),
                  absl::ZeroDuration());
}

}  // namespace gradsync
