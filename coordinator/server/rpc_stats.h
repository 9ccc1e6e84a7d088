// RpcStats: how many calls each gRPC method of the coordinator served, by
// status code, and how long they took (a histogram per method), for the
// Prometheus page (coordinator/http/). A call's time runs from when the
// server matched it to when its status was sent; streams and waiting calls
// (WatchJob, StoreSession, barriers) count their whole length. A call that
// ends without a status (the client went away) counts as CANCELLED.
//
// RpcStatsInterceptorFactory records every call of the server it is given
// to (ServerBuilder::experimental().SetInterceptorCreators).
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {

class RpcStats {
 public:
  // Upper bounds (seconds) of the histogram buckets; the last bucket
  // (+Inf) is implicit.
  static constexpr std::array<double, 14> kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,  0.5,    1,     2.5,  5,     10};

  struct Method {
    std::string name;                      // "/gradsync.v1.JobService/GetJob"
    std::map<std::string, int64_t> codes;  // "OK" -> calls
    // Cumulative: bucket_counts[i] calls took <= kBuckets[i]; the +Inf
    // bucket is `count`.
    std::array<int64_t, kBuckets.size()> bucket_counts{};
    int64_t count = 0;
    double sum_seconds = 0;
  };

  void Record(const std::string& method, grpc::StatusCode code, double seconds);
  // Every method called so far, by name.
  std::vector<Method> Methods() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Method> methods_ ABSL_GUARDED_BY(mu_);
};

// The name Prometheus users know for a status code ("OK", "NOT_FOUND").
const char* StatusCodeName(grpc::StatusCode code);

class RpcStatsInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcStatsInterceptorFactory(RpcStats* stats) : stats_(stats) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  RpcStats* const stats_;
};

}  // namespace gradsync
