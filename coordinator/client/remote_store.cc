#include "coordinator/client/remote_store.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {
namespace {

// The status a StoreSession reply carries.
absl::Status ReplyStatus(const v1::StoreReply& reply) {
  return FromGrpcStatus(grpc::Status(
      static_cast<grpc::StatusCode>(reply.code()), reply.message()));
}

}  // namespace

RemoteStore::RemoteStore(std::shared_ptr<v1::WorkerService::StubInterface> stub,
                         v1::TaskRef task, std::string worker_key,
                         RemoteStoreOptions options)
    : stub_(std::move(stub)),
      task_(std::move(task)),
      worker_key_(std::move(worker_key)),
      options_(options) {
  if (options_.stream) {
    stream_ = std::make_unique<StoreStream>(stub_, worker_key_);
  }
}

std::unique_ptr<grpc::ClientContext> RemoteStore::Context(
    absl::Duration wait) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + wait + options_.grace));
  ctx->AddMetadata(kWorkerKeyHeader, worker_key_);
  return ctx;
}

std::optional<absl::StatusOr<v1::StoreReply>> RemoteStore::OnStream(
    const v1::StoreOp& op, absl::Duration wait) {
  if (stream_ == nullptr) return std::nullopt;
  std::optional<absl::StatusOr<v1::StoreReply>> reply =
      stream_->TryCall(op, absl::Now() + wait + options_.grace);
  if (reply.has_value() && reply->ok()) {
    if (absl::Status s = ReplyStatus(**reply); !s.ok()) return s;
  }
  return reply;
}

absl::Status RemoteStore::Set(const std::string& key,
                              const std::string& value) {
  v1::StoreOp op;
  v1::StoreSetRequest& request = *op.mutable_set();
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_value(value);
  if (stream_ != nullptr) {
    // Pipelined as c10d's TCPStore set is (store_stream.h).
    if (std::optional<absl::Status> sent =
            stream_->TrySend(op, absl::Now() + options_.grace)) {
      return *sent;
    }
  }
  v1::StoreSetResponse response;
  return FromGrpcStatus(
      stub_->StoreSet(Context(absl::ZeroDuration()).get(), request, &response));
}

absl::StatusOr<std::string> RemoteStore::Get(const std::string& key,
                                             absl::Duration timeout) {
  v1::StoreOp op;
  v1::StoreGetRequest& request = *op.mutable_get();
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  if (auto reply = OnStream(op, timeout)) {
    if (!reply->ok()) return reply->status();
    return std::move(*(*reply)->mutable_get()->mutable_value());
  }
  v1::StoreGetResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->StoreGet(Context(timeout).get(), request, &response));
  if (!s.ok()) return s;
  return std::move(*response.mutable_value());
}

absl::StatusOr<int64_t> RemoteStore::Add(const std::string& key,
                                         int64_t delta) {
  v1::StoreOp op;
  v1::StoreAddRequest& request = *op.mutable_add();
  *request.mutable_task() = task_;
  request.set_key(key);
  request.set_delta(delta);
  if (auto reply = OnStream(op, absl::ZeroDuration())) {
    if (!reply->ok()) return reply->status();
    return (*reply)->add().value();
  }
  v1::StoreAddResponse response;
  absl::Status s = FromGrpcStatus(
      stub_->StoreAdd(Context(absl::ZeroDuration()).get(), request, &response));
  if (!s.ok()) return s;
  return response.value();
}

absl::Status RemoteStore::Wait(const std::vector<std::string>& keys,
                               absl::Duration timeout) {
  v1::StoreOp op;
  v1::StoreWaitRequest& request = *op.mutable_wait();
  *request.mutable_task() = task_;
  for (const std::string& k : keys) request.add_keys(k);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  if (auto reply = OnStream(op, timeout)) return reply->status();
  v1::StoreWaitResponse response;
  return FromGrpcStatus(
      stub_->StoreWait(Context(timeout).get(), request, &response));
}

absl::StatusOr<std::vector<std::string>> RemoteStore::MultiGet(
    const std::vector<std::string>& keys, absl::Duration timeout) {
  v1::StoreOp op;
  v1::StoreMultiGetRequest& request = *op.mutable_multi_get();
  *request.mutable_task() = task_;
  for (const std::string& k : keys) request.add_keys(k);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::StoreMultiGetResponse response;
  if (auto reply = OnStream(op, timeout)) {
    if (!reply->ok()) return reply->status();
    response = std::move(*(*reply)->mutable_multi_get());
  } else if (absl::Status s = FromGrpcStatus(stub_->StoreMultiGet(
                 Context(timeout).get(), request, &response));
             !s.ok()) {
    return s;
  }
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
