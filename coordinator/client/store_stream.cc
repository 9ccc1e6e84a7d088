#include "coordinator/client/store_stream.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "coordinator/client/call_watchdog.h"
#include "coordinator/wire/grpc_status.h"
#include "coordinator/wire/secrets.h"

namespace gradsync {
namespace {

// Sets sent and not yet settled before a TrySend settles them with a sync
// op.
constexpr size_t kMaxUnanswered = 64;
// How long closing or breaking a stream may take.
constexpr absl::Duration kCloseWait = absl::Seconds(2);

const char* OpName(const v1::StoreOp& op) {
  switch (op.op_case()) {
    case v1::StoreOp::kSet:
      return "set";
    case v1::StoreOp::kGet:
      return "get";
    case v1::StoreOp::kAdd:
      return "add";
    case v1::StoreOp::kWait:
      return "wait";
    case v1::StoreOp::kMultiGet:
      return "multi-get";
    case v1::StoreOp::kSync:
      return "sync";
    case v1::StoreOp::OP_NOT_SET:
      break;
  }
  return "op";
}

// Runs `blocking` with `context` cancelled at `deadline`; true when it was.
template <typename F>
bool WithDeadline(grpc::ClientContext& context, absl::Time deadline,
                  F&& blocking) {
  CallWatchdog& watchdog = CallWatchdog::Shared();
  const uint64_t id = watchdog.Arm(&context, deadline);
  blocking();
  return watchdog.Disarm(id);
}

}  // namespace

struct StoreStream::Session {
  grpc::ClientContext context;
  std::unique_ptr<
      grpc::ClientReaderWriterInterface<v1::StoreOp, v1::StoreReply>>
      stream;
  std::deque<std::string> unanswered;  // sets sent since the last reply
};

StoreStream::StoreStream(std::shared_ptr<v1::WorkerService::StubInterface> stub,
                         std::string worker_key)
    : stub_(std::move(stub)), worker_key_(std::move(worker_key)) {}

StoreStream::~StoreStream() {
  absl::MutexLock lock(&mu_);
  if (session_ == nullptr) return;
  const absl::Time deadline = absl::Now() + kCloseWait;
  if (absl::Status s = Drain(deadline); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
  }
  if (session_ == nullptr) return;  // Drain broke it
  Session& session = *session_;
  WithDeadline(session.context, deadline, [&session] {
    session.stream->WritesDone();
    (void)session.stream->Finish();
  });
}

absl::Status StoreStream::Open(absl::Time deadline) {
  if (session_ != nullptr) return absl::OkStatus();
  auto session = std::make_unique<Session>();
  session->context.AddMetadata(kWorkerKeyHeader, worker_key_);
  const bool timed_out = WithDeadline(session->context, deadline, [&] {
    session->stream = stub_->StoreSession(&session->context);
  });
  if (session->stream == nullptr || timed_out) {
    return absl::UnavailableError(
        "store session: the coordinator could not be reached");
  }
  session_ = std::move(session);
  return absl::OkStatus();
}

absl::Status StoreStream::Write(const v1::StoreOp& op, absl::Time deadline) {
  bool ok = false;
  Session& session = *session_;
  const bool timed_out = WithDeadline(session.context, deadline,
                                      [&] { ok = session.stream->Write(op); });
  return ok ? absl::OkStatus() : Break(OpName(op), timed_out);
}

absl::Status StoreStream::Read(v1::StoreReply* reply, const char* what,
                               absl::Time deadline) {
  bool ok = false;
  Session& session = *session_;
  const bool timed_out = WithDeadline(
      session.context, deadline, [&] { ok = session.stream->Read(reply); });
  return ok ? absl::OkStatus() : Break(what, timed_out);
}

absl::Status StoreStream::Settle(const v1::StoreReply& reply) {
  session_->unanswered.clear();
  if (reply.failed_sets().empty()) return absl::OkStatus();
  const v1::StoreSetFailure& first = reply.failed_sets(0);
  return absl::Status(
      FromGrpcStatus(
          grpc::Status(static_cast<grpc::StatusCode>(first.code()), ""))
          .code(),
      absl::StrCat("store set of key '", first.key(),
                   "' (sent earlier on this stream) failed: ", first.message(),
                   reply.failed_sets_size() > 1
                       ? absl::StrCat(" (and ", reply.failed_sets_size() - 1,
                                      " more refused sets)")
                       : ""));
}

absl::Status StoreStream::Drain(absl::Time deadline) {
  if (session_->unanswered.empty()) return absl::OkStatus();
  v1::StoreOp sync;
  sync.mutable_sync();
  if (absl::Status s = Write(sync, deadline); !s.ok()) return s;
  v1::StoreReply reply;
  if (absl::Status s = Read(&reply, "set", deadline); !s.ok()) return s;
  return Settle(reply);
}

absl::Status StoreStream::Break(const char* what, bool timed_out) {
  // Finish gives the failed stream's status (bounded: the call may still
  // be open on the other side).
  grpc::Status status;
  Session& session = *session_;
  WithDeadline(session.context, absl::Now() + kCloseWait,
               [&] { status = session.stream->Finish(); });
  if (timed_out) {
    status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "no answer from the coordinator by the deadline "
                          "(store session cancelled)");
  } else if (status.ok()) {
    status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the coordinator closed the store session");
  }
  std::string message =
      absl::StrCat("store ", what, ": ", status.error_message());
  const std::deque<std::string>& lost = session_->unanswered;
  if (!lost.empty()) {
    absl::StrAppend(&message, "; ", lost.size(),
                    " earlier set(s) were sent but never settled, so may "
                    "not have been applied: keys ",
                    absl::StrJoin(lost, ", "));
  }
  session_.reset();
  return absl::Status(FromGrpcStatus(status).code(), message);
}

absl::StatusOr<v1::StoreReply> StoreStream::Exchange(const v1::StoreOp& op,
                                                     absl::Time deadline) {
  if (absl::Status s = Open(deadline); !s.ok()) return s;
  if (absl::Status s = Write(op, deadline); !s.ok()) return s;
  v1::StoreReply reply;
  if (absl::Status s = Read(&reply, OpName(op), deadline); !s.ok()) return s;
  // The reply settles the sets sent before the op.
  if (absl::Status s = Settle(reply); !s.ok()) return s;
  return reply;
}

bool StoreStream::MayRepeat(const absl::Status& failed, bool reused) const {
  // An open stream can die while idle (the coordinator restarted, a proxy
  // dropped the connection): an op it fails may go once more on a new
  // stream when repeating it is harmless: nothing else was lost with the
  // stream (no set unsettled) and the deadline has not passed.
  return reused && session_ == nullptr && !absl::IsDeadlineExceeded(failed);
}

std::optional<absl::StatusOr<v1::StoreReply>> StoreStream::TryCall(
    const v1::StoreOp& op, absl::Time deadline) {
  if (!mu_.TryLock()) return std::nullopt;
  absl::StatusOr<v1::StoreReply> reply = Call(op, deadline);
  mu_.Unlock();
  return reply;
}

absl::StatusOr<v1::StoreReply> StoreStream::Call(const v1::StoreOp& op,
                                                 absl::Time deadline) {
  const bool reused = session_ != nullptr && session_->unanswered.empty();
  absl::StatusOr<v1::StoreReply> reply = Exchange(op, deadline);
  // An add is not repeated: the first may have been applied.
  if (!reply.ok() && !op.has_add() && MayRepeat(reply.status(), reused)) {
    reply = Exchange(op, deadline);
  }
  return reply;
}

std::optional<absl::Status> StoreStream::TrySend(const v1::StoreOp& op,
                                                 absl::Time deadline) {
  if (!mu_.TryLock()) return std::nullopt;
  absl::Status sent = Send(op, deadline);
  mu_.Unlock();
  return sent;
}

absl::Status StoreStream::Send(const v1::StoreOp& op, absl::Time deadline) {
  const bool existed = session_ != nullptr;
  if (absl::Status s = Open(deadline); !s.ok()) return s;
  if (session_->unanswered.size() >= kMaxUnanswered) {
    // Settle them now: their errors should not wait long, nor their keys
    // pile up.
    if (absl::Status s = Drain(deadline); !s.ok()) return s;
  }
  const bool reused = existed && session_->unanswered.empty();
  absl::Status sent = Write(op, deadline);
  // A set may be repeated: it writes the same value again.
  if (!sent.ok() && MayRepeat(sent, reused)) {
    if (absl::Status s = Open(deadline); !s.ok()) return s;
    sent = Write(op, deadline);
  }
  if (!sent.ok()) return sent;
  session_->unanswered.push_back(op.set().key());
  return absl::OkStatus();
}

}  // namespace gradsync
