// StoreStream: a rank's end of one WorkerService.StoreSession stream: store
// ops sent as messages on a stream that stays open, each answered by one
// reply, in order (see worker_service.proto). RemoteStore sends its ops
// through it. gRPC's synchronous API: the calling thread sends and reads
// itself (no hand-off to a callback thread, the larger part of a small
// op's cost); CallWatchdog bounds each wait.
//
// Contract:
// - One op at a time. A Try* call made while another thread's op is on the
//   stream returns nullopt at once, and the caller makes the unary call
//   instead, so one thread's blocking get never holds up another's set.
// - Every op has a deadline: past it the stream is cancelled and the op
//   fails with DEADLINE_EXCEEDED naming it.
// - TrySend is for sets, and is pipelined as c10d's TCPStore set is (it
//   returns once the op is written, without a round trip). The coordinator
//   applies ops in order and reports refused sets with its next reply:
//   that of the next TryCall, or of a sync op TrySend sends once 64 sets
//   are unsettled, or the destructor. A refused set fails the op whose
//   reply reports it, naming the set's key and the error. A stream that
//   breaks fails the op in flight with the stream's status and names the
//   sets it leaves unsettled; the next op opens a new stream. An op that
//   finds its stream dead (the coordinator restarted or the connection
//   dropped while it was idle) goes once more on a new stream, unless
//   sets were lost with it or the op is an add (it may have been applied).
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/worker_service.grpc.pb.h"

namespace gradsync {

class StoreStream {
 public:
  // Calls carry `worker_key` as RemoteStore's unary calls do.
  StoreStream(std::shared_ptr<v1::WorkerService::StubInterface> stub,
              std::string worker_key);
  // Settles the sets still unsettled (a refusal goes to stderr), then
  // closes the stream: at most about 2 s.
  ~StoreStream();
  StoreStream(const StoreStream&) = delete;
  StoreStream& operator=(const StoreStream&) = delete;

  // The reply to `op` (its code and message are the op's status), an error
  // when the stream failed, `deadline` passed or an earlier set failed, or
  // nullopt when another op is in flight.
  std::optional<absl::StatusOr<v1::StoreReply>> TryCall(const v1::StoreOp& op,
                                                        absl::Time deadline);
  // Writes the set `op` without waiting for its reply (above): OK once
  // written, an error when the stream failed or an earlier set failed
  // (then `op` is not sent), nullopt when another op is in flight.
  std::optional<absl::Status> TrySend(const v1::StoreOp& op,
                                      absl::Time deadline);

 private:
  struct Session;  // one open stream

  // TryCall and TrySend once they hold the stream.
  absl::StatusOr<v1::StoreReply> Call(const v1::StoreOp& op,
                                      absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Send(const v1::StoreOp& op, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The open stream, opened when there is none.
  absl::Status Open(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Write(const v1::StoreOp& op, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Read(v1::StoreReply* reply, const char* what,
                    absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Open, write `op`, read and settle its reply.
  absl::StatusOr<v1::StoreReply> Exchange(const v1::StoreOp& op,
                                          absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether an op that `failed` as its stream broke may go once more on a
  // new one: the stream was open before the op (`reused`) with no set
  // unsettled, and the failure is not the op's deadline.
  bool MayRepeat(const absl::Status& failed, bool reused) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles the sets sent since the last reply with a sync op.
  absl::Status Drain(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sets sent before `reply` are settled by it: the first refused
  // one's error.
  absl::Status Settle(const v1::StoreReply& reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a failed stream: the error for the op `what`, with the stream's
  // status (DEADLINE_EXCEEDED when `timed_out`) and the sets it lost.
  absl::Status Break(const char* what, bool timed_out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<v1::WorkerService::StubInterface> stub_;
  const std::string worker_key_;
  absl::Mutex mu_;  // held for the length of one op
  std::unique_ptr<Session> session_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync
