#include "coordinator/server/rpc_stats.h"

#include <chrono>
#include <utility>

namespace gradsync {

void RpcStats::Record(const std::string& method, grpc::StatusCode code,
                      double seconds) {
  absl::MutexLock lock(&mu_);
  Method& m = methods_[method];
  if (m.name.empty()) m.name = method;
  ++m.codes[StatusCodeName(code)];
  for (size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) ++m.bucket_counts[i];
  }
  ++m.count;
  m.sum_seconds += seconds;
}

std::vector<RpcStats::Method> RpcStats::Methods() const {
  absl::MutexLock lock(&mu_);
  std::vector<Method> out;
  out.reserve(methods_.size());
  for (const auto& [name, method] : methods_) out.push_back(method);
  return out;
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

namespace {

// One per call: records the call as its status is sent, or as CANCELLED
// when gRPC destroys the interceptor without one (the call's end).
class RpcStatsInterceptor : public grpc::experimental::Interceptor {
 public:
  RpcStatsInterceptor(RpcStats* stats, std::string method)
      : stats_(stats),
        method_(std::move(method)),
        start_(std::chrono::steady_clock::now()) {}

  ~RpcStatsInterceptor() override {
    if (!recorded_) Record(grpc::StatusCode::CANCELLED);
  }

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      Record(methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  RpcStats* const stats_;
  const std::string method_;
  const std::chrono::steady_clock::time_point start_;
  bool recorded_ = false;

  void Record(grpc::StatusCode code) {
    std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start_;
    stats_->Record(method_, code, took.count());
    recorded_ = true;
  }
};

}  // namespace

grpc::experimental::Interceptor*
RpcStatsInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcStatsInterceptor(stats_, info->method());
}

}  // namespace gradsync
