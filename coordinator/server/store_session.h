// StoreSessionReactor: serves one WorkerService.StoreSession stream (see
// worker_service.proto) on gRPC's callback API. Ops are applied one at a
// time, in order: the next op is read once the previous one is applied
// and its reply (sets have none) written; a refused set is reported with
// the next reply.
// An op that is answered without waiting (a set, an add, a get of a key
// that is there) is answered on the callback thread that read it; one that
// waits for missing keys is answered from a thread of its own, so no
// callback thread blocks. Each op is authorized and answered as its unary
// call is, by a StoreOpServer (the WorkerService, worker_service.h).
//
// Owned by gRPC: created by WorkerServiceImpl::StoreSession, deleted in
// OnDone. The StoreOpServer must outlive it.
#pragma once

#include <grpcpp/grpcpp.h>

#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

// What a session needs of the service that hosts it.
class StoreOpServer {
 public:
  virtual ~StoreOpServer() = default;
  // One op, answered into `reply` as its unary call would be. With
  // `may_wait` false an op that would wait for a missing key is not
  // answered: false, `reply` untouched (the caller answers it later with
  // `may_wait`, on a thread that may block). Thread-safe.
  virtual bool ServeStoreOp(const grpc::ServerContextBase& context,
                            const v1::StoreOp& op, bool may_wait,
                            v1::StoreReply* reply) = 0;
};

class StoreSessionReactor final
    : public grpc::ServerBidiReactor<v1::StoreOp, v1::StoreReply> {
 public:
  StoreSessionReactor(StoreOpServer* service,
                      grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // After an op is applied: the set's refusal kept, any other op's reply
  // written, then the next op read.
  void Answer();

  StoreOpServer* const service_;
  grpc::CallbackServerContext* const context_;
  // Touched by one thread at a time: the callback that read the op, or the
  // waiting thread it started, until StartWrite.
  v1::StoreOp op_;
  v1::StoreReply reply_;
  // Sets refused since the last reply.
  google::protobuf::RepeatedPtrField<v1::StoreSetFailure> failed_sets_;
};

}  // namespace gradsync
