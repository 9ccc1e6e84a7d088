#include "coordinator/server/store_session.h"

#include <thread>

namespace gradsync {

StoreSessionReactor::StoreSessionReactor(StoreOpServer* service,
                                         grpc::CallbackServerContext* context)
    : service_(service), context_(context) {
  StartRead(&op_);
}

void StoreSessionReactor::OnReadDone(bool ok) {
  if (!ok) {
    // The client closed its side (or the call was cancelled): nothing is
    // in flight, since an op is read only after the last reply was written.
    Finish(grpc::Status::OK);
    return;
  }
  if (service_->ServeStoreOp(*context_, op_, /*may_wait=*/false, &reply_)) {
    Answer();
    return;
  }
  // The wait is bounded by the op's timeout and the coordinator's max wait;
  // a closed store (attempt ended, shutdown) wakes it sooner. The reactor
  // is not deleted before OnDone, which cannot come before this write.
  std::thread([this] {
    service_->ServeStoreOp(*context_, op_, /*may_wait=*/true, &reply_);
    Answer();
  }).detach();
}

void StoreSessionReactor::Answer() {
  if (op_.has_set()) {
    // Not answered by itself: a refusal goes with the next reply.
    if (reply_.code() != 0) {
      v1::StoreSetFailure* failure = failed_sets_.Add();
      failure->set_key(op_.set().key());
      failure->set_code(reply_.code());
      failure->set_message(reply_.message());
    }
    StartRead(&op_);
    return;
  }
  reply_.mutable_failed_sets()->Swap(&failed_sets_);
  failed_sets_.Clear();
  StartWrite(&reply_);
}

void StoreSessionReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        "store session: the reply could not be written"));
    return;
  }
  StartRead(&op_);
}

}  // namespace gradsync
