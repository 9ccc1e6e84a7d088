// Latencies: call latencies in milliseconds gathered from several threads,
// and the small gRPC and job helpers the control-plane benchmark's scenarios
// share. Latencies is thread-safe; the helpers are pure.
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "coordinator/control/metrics_aggregator.h"
#include "coordinator/wire/secrets.h"
#include "gradsync/v1/job_service.pb.h"

namespace gradsync::bench {

class Latencies {
 public:
  void Add(double ms) {
    absl::MutexLock lock(&mu_);
    values_.push_back(ms);
  }
  void Merge(const std::vector<double>& v) {
    absl::MutexLock lock(&mu_);
    values_.insert(values_.end(), v.begin(), v.end());
  }
  size_t count() const {
    absl::MutexLock lock(&mu_);
    return values_.size();
  }
  std::vector<double> Values() const {
    absl::MutexLock lock(&mu_);
    return values_;
  }
  std::string Describe(double seconds) const {
    absl::MutexLock lock(&mu_);
    return absl::StrFormat("%zu ops, %.0f ops/s, p50 %.3f ms, p99 %.3f ms",
                           values_.size(), values_.size() / seconds,
                           Quantile(values_, 0.5), Quantile(values_, 0.99));
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<double> values_ ABSL_GUARDED_BY(mu_);
};

inline double MsSince(absl::Time start) {
  return absl::ToDoubleMilliseconds(absl::Now() - start);
}

// A call context with a deadline of `seconds`, acting as the worker holding
// `key` (none if empty).
inline std::unique_ptr<grpc::ClientContext> Ctx(const std::string& key = "",
                                                double seconds = 10) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  if (!key.empty()) ctx->AddMetadata(kWorkerKeyHeader, key);
  return ctx;
}

// A channel of its own (no shared subchannel), as a separate host has.
inline std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

// A submission of an `ranks`-rank job (exactly) of the small mlp over
// `dataset`: what the scenarios need a job for is its store and barriers.
inline v1::SubmitJobRequest MlpJob(const std::string& name,
                                   const std::string& dataset, int ranks) {
  v1::SubmitJobRequest submit;
  v1::JobSpec* spec = submit.mutable_spec();
  spec->set_name(name);
  spec->mutable_dataset()->set_path(dataset);
  spec->set_model("mlp");
  spec->set_batch_size(1);
  spec->mutable_world_size()->set_min_workers(ranks);
  spec->mutable_world_size()->set_max_workers(ranks);
  return submit;
}

}  // namespace gradsync::bench
