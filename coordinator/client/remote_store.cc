#include "coordinator/client/remote_store.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {

std::unique_ptr<grpc::ClientContext> RemoteStore::Context(
    absl::Duration wait) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + wait + absl::Seconds(10)));
  ctx->AddMetadata(kWorkerKeyHeader, worker_key_);
  return ctx;
}

absl::Status RemoteStore::Set(const std::string& key,
                              const std::string& value) {
  v1::StoreSetRequest request;
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_value(value);
  v1::StoreSetResponse response;
  return FromGrpcStatus(
      stub_->StoreSet(Context(absl::ZeroDuration()).get(), request, &response));
}

absl::StatusOr<std::string> RemoteStore::Get(const std::string& key,
                                             absl::Duration timeout) {
  v1::StoreGetRequest request;
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::StoreGetResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->StoreGet(Context(timeout).get(), request, &response));
  if (!s.ok()) return s;
  return std::move(*response.mutable_value());
}

absl::StatusOr<int64_t> RemoteStore::Add(const std::string& key,
                                         int64_t delta) {
  v1::StoreAddRequest request;
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_delta(delta);
  v1::StoreAddResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->StoreAdd(Context(absl::ZeroDuration()).get(), request, &response));
  if (!s.ok()) return s;
  return response.value();
}

absl::Status RemoteStore::Wait(const std::vector<std::string>& keys,
                               absl::Duration timeout) {
  v1::StoreWaitRequest request;
  *request.mutable_task() = task_;
  for (const std::string& k : keys) request.add_keys(k);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::StoreWaitResponse response;
  return FromGrpcStatus(
      stub_->StoreWait(Context(timeout).get(), request, &response));
}

absl::StatusOr<std::vector<std::string>> RemoteStore::MultiGet(
    const std::vector<std::string>& keys, absl::Duration timeout) {
  v1::StoreMultiGetRequest request;
  *request.mutable_task() = task_;
  for (const std::string& k : keys) request.add_keys(k);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::StoreMultiGetResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->StoreMultiGet(Context(timeout).get(), request, &response));
  if (!s.ok()) return s;
  if (response.values_size() != static_cast<int>(keys.size())) {
    return absl::InternalError(absl::StrCat("store multi-get: asked for ",
                                            keys.size(),
                                            " keys, the coordinator "
                                            "answered ",
                                            response.values_size(), " values"));
  }
  return std::vector<std::string>(
      std::make_move_iterator(response.mutable_values()->begin()),
      std::make_move_iterator(response.mutable_values()->end()));
}

}  // namespace gradsync
