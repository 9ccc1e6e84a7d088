// libFuzzer target: arbitrary bytes as requests to the coordinator, both
// straight to its handlers and through the gRPC service layer (built with
// clang, AddressSanitizer and LeakSanitizer by tests/fuzz/run_fuzz.sh).
//
// Each input runs against a fresh Coordinator that already has two
// registered workers running a 2-rank job (so handlers reach their deep
// paths). The input is a sequence of records
//   [selector: 1 byte][length: 1 byte][length bytes]
// where the selector's low 5 bits pick a call and the bytes are parsed as
// its request message (records that do not parse are skipped). The
// selector's top bits:
//   0x80  credentials: the real key of the worker the request names and,
//         through the services, the role's token;
//   0x40  through JobServiceImpl / WorkerServiceImpl, with the metadata a
//         client sends ("authorization: Bearer", the worker key header),
//         as gRPC would call them; otherwise straight to the Coordinator,
//         after Coordinator::AuthorizeWorker but regardless of its answer
//         (defence in depth: the handlers must hold up on their own).
// Through the services, an OK answer is checked against who may do what:
// no credentials -> never OK; a task's call (shards, completion, store
// writes, barriers, metrics) -> the caller holds that job's current attempt
// as the rank it acts for; evaluation results and checkpoint commits ->
// rank 0 (issue 17's finding 1); store keys of a rank -> that rank. A
// violation aborts, so libFuzzer saves the input.
// Blocking calls wait at most 5 ms. Dataset paths are confined to a data
// root, so no input walks the disk.
//
// Nothing may crash, leak, hang (libFuzzer's -timeout) or break the rules.
#include <grpcpp/test/server_context_test_spouse.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/control/coordinator.h"
#include "coordinator/persist/model_file_store.h"
#include "coordinator/persist/snapshot_store.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/call_gate.h"
#include "coordinator/server/job_service.h"
#include "coordinator/server/key_owner.h"
#include "coordinator/server/worker_service.h"
#include "coordinator/wire/secrets.h"
#include "google/protobuf/stubs/logging.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;

constexpr int kIncarnation = 0xf022;  // worker ids w1-f022, w2-f022, ...

// A tiny image-folder data set (the files are never decoded).
const std::string& DataRoot() {
  static const std::string* root = [] {
    auto* dir = new std::string(
        (fs::temp_directory_path() / absl::StrCat("gradsync-fuzz-", getpid()))
            .string());
    for (const char* split : {"train", "test"}) {
      for (const char* cls : {"a", "b"}) {
        fs::create_directories(fs::path(*dir) / "data" / split / cls);
        for (int i = 0; i < 3; ++i) {
          std::ofstream(fs::path(*dir) / "data" / split / cls /
                        absl::StrCat(i, ".png"))
              << "x";
        }
      }
    }
    return dir;
  }();
  return *root;
}

constexpr char kUserToken[] = "fuzz-user-token";
constexpr char kWorkerToken[] = "fuzz-worker-token";

// One snapshot store for the process (the services need one; no non-
// streaming call writes it).
SnapshotStore& Snapshots() {
  static SnapshotStore* store =
      SnapshotStore::Open(DataRoot() + "/snapshots", SnapshotRetention())
          ->release();
  return *store;
}

// And one model file store.
ModelFileStore& ModelFiles() {
  static ModelFileStore* store =
      ModelFileStore::Open(DataRoot() + "/model-files")->release();
  return *store;
}

struct World {
  std::unique_ptr<Coordinator> coordinator;
  std::map<std::string, std::string> keys;  // worker id -> key
  // The gRPC layer over `coordinator` (declared after it: destroyed first).
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<CallGate> gate;
  std::unique_ptr<JobServiceImpl> jobs;
  std::unique_ptr<WorkerServiceImpl> workers;
};

// A coordinator with workers w1, w2 running job-000001 (2 ranks).
World MakeWorld() {
  CoordinatorOptions options;
  options.run_failure_detector = false;
  options.incarnation = kIncarnation;
  options.heartbeat_timeout = absl::Seconds(1);
  options.max_wait = absl::Milliseconds(5);
  options.max_world_size = 8;
  options.data_roots = {DataRoot()};
  World world;
  world.coordinator = *Coordinator::Create(options, nullptr);
  Coordinator& c = *world.coordinator;
  for (int i = 0; i < 2; ++i) {
    v1::RegisterWorkerRequest reg;
    reg.set_host("host-a");
    auto r = c.RegisterWorker(reg);
    world.keys[r->worker_id()] = r->worker_key();
  }
  v1::JobSpec spec;
  spec.mutable_dataset()->set_path(DataRoot() + "/data");
  spec.mutable_dataset()->set_eval_split("test");
  spec.set_model("mlp");
  spec.set_batch_size(2);
  spec.set_epochs(2);
  spec.mutable_world_size()->set_max_workers(2);
  (void)c.SubmitJob(spec);
  for (const auto& [id, key] : world.keys) {
    v1::HeartbeatRequest hb;
    hb.mutable_task()->set_worker_id(id);
    auto r = c.Heartbeat(hb);
    hb.set_state(v1::WORKER_STATE_RUNNING);
    hb.mutable_task()->set_job_id(r->assignment().job_id());
    hb.mutable_task()->set_attempt(r->assignment().attempt());
    hb.mutable_task()->set_rank(r->assignment().rank());
    (void)c.Heartbeat(hb);
  }
  world.auth = std::make_unique<Authenticator>(
      AuthTokens{kUserToken, kWorkerToken, false});
  world.gate = std::make_unique<CallGate>(16);
  world.jobs = std::make_unique<JobServiceImpl>(
      &c, world.auth.get(), &Snapshots(), &ModelFiles(), int64_t{1} << 20,
      world.gate.get());
  world.workers = std::make_unique<WorkerServiceImpl>(
      &c, world.auth.get(), &Snapshots(), int64_t{1} << 20, &ModelFiles(),
      world.gate.get());
  return world;
}

absl::Duration Timeout(int64_t timeout_ms) {
  return absl::Milliseconds(std::clamp<int64_t>(timeout_ms, 0, 5));
}

absl::Time Deadline(int64_t timeout_ms) {
  return absl::Now() + Timeout(timeout_ms);
}

template <typename Request>
bool Parse(const uint8_t* data, size_t size, Request* request) {
  return request->ParseFromArray(data, static_cast<int>(size));
}

// Through the services (below).
void RunService(World& w, uint8_t selector, const uint8_t* data, size_t size);

// Runs one record against the world.
void Run(World& w, uint8_t selector, const uint8_t* data, size_t size) {
  if (selector & 0x40) {
    RunService(w, selector, data, size);
    return;
  }
  Coordinator& c = *w.coordinator;
  const bool with_key = selector & 0x80;
  auto key_of = [&](const std::string& worker_id) {
    auto it = w.keys.find(worker_id);
    return with_key && it != w.keys.end() ? it->second : std::string();
  };
  // As WorkerServiceImpl: authorize, then (here regardless) run.
  auto authorize = [&](const std::string& worker_id, const std::string& job,
                       int attempt, int rank) {
    (void)c.AuthorizeWorker(worker_id, key_of(worker_id), job, attempt, rank);
  };
  switch (selector & 0x1f) {
    case 0: {
      v1::SubmitJobRequest r;
      if (Parse(data, size, &r)) (void)c.SubmitJob(r.spec());
      break;
    }
    case 1: {
      v1::GetJobRequest r;
      if (Parse(data, size, &r)) {
        (void)c.GetJob(r.job_id());
        (void)c.GetJobCurves(r.job_id());
        v1::GetJobLogsRequest logs;
        logs.set_job_id(r.job_id());
        (void)c.GetJobLogs(logs);
      }
      break;
    }
    case 2: {
      v1::ListJobsRequest r;
      if (Parse(data, size, &r))
        (void)c.ListJobs(r.page_size(), r.page_token());
      break;
    }
    case 3: {
      v1::CancelJobRequest r;
      if (Parse(data, size, &r)) (void)c.CancelJob(r.job_id(), r.reason());
      break;
    }
    case 4: {
      (void)c.ListWorkers();
      v1::WatchJobRequest r;
      if (Parse(data, size, &r)) (void)c.JobEvents(r.job_id());
      break;
    }
    case 5: {
      v1::RegisterWorkerRequest r;
      if (!Parse(data, size, &r)) break;
      auto reg = c.RegisterWorker(r);
      if (reg.ok()) w.keys[reg->worker_id()] = reg->worker_key();
      break;
    }
    case 6: {
      v1::HeartbeatRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), "", 0, -1);
      (void)c.Heartbeat(r);
      break;
    }
    case 7: {
      v1::GetShardRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), r.task().job_id(), r.task().attempt(),
                r.task().rank());
      (void)c.GetShard(r);
      break;
    }
    case 8: {
      v1::ReportMetricsRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), r.task().job_id(), r.task().attempt(),
                -1);
      (void)c.ReportMetrics(r);
      break;
    }
    case 9: {
      v1::CompleteTaskRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), r.task().job_id(), r.task().attempt(),
                r.task().rank());
      (void)c.CompleteTask(r);
      break;
    }
    case 10: {
      v1::StoreSetRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), r.task().job_id(), r.task().attempt(),
                -1);
      if (auto s = c.Store(r.task().job_id(), r.task().attempt()); s.ok()) {
        (void)(*s)->Set(r.key(), r.value());
      }
      break;
    }
    case 11: {
      v1::StoreGetRequest r;
      if (!Parse(data, size, &r)) break;
      if (auto s = c.Store(r.task().job_id(), r.task().attempt()); s.ok()) {
        (void)(*s)->Get(r.key(), Timeout(r.timeout_ms()));
      }
      break;
    }
    case 12: {
      v1::StoreAddRequest r;
      if (!Parse(data, size, &r)) break;
      if (auto s = c.Store(r.task().job_id(), r.task().attempt()); s.ok()) {
        (void)(*s)->Add(r.key(), r.delta());
      }
      break;
    }
    case 13: {
      v1::StoreWaitRequest r;
      if (!Parse(data, size, &r)) break;
      if (auto s = c.Store(r.task().job_id(), r.task().attempt()); s.ok()) {
        std::vector<std::string> keys(r.keys().begin(), r.keys().end());
        (void)(*s)->Wait(keys, Timeout(r.timeout_ms()));
      }
      break;
    }
    case 14: {
      v1::BarrierRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), r.task().job_id(), r.task().attempt(),
                r.task().rank());
      if (auto b = c.Barriers(r.task().job_id(), r.task().attempt()); b.ok()) {
        (void)(*b)->Arrive(r.name(), r.task().rank(), Deadline(r.timeout_ms()));
      }
      break;
    }
    case 15: {
      // The failure detector at a fuzzed moment: workers die, jobs restart.
      const int64_t ahead_ms = size > 0 ? data[0] * 20 : 0;
      c.SweepDeadWorkers(absl::Now() + absl::Milliseconds(ahead_ms));
      break;
    }
    case 16: {
      v1::DeleteJobRequest r;
      if (Parse(data, size, &r)) (void)c.DeleteJob(r.job_id());
      break;
    }
    case 17: {
      v1::DeregisterRequest r;
      if (!Parse(data, size, &r)) break;
      authorize(r.task().worker_id(), "", 0, -1);
      (void)c.Deregister(r);
      break;
    }
    default:
      break;
  }
}

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "coordinator_fuzzer: RULE BROKEN: %s\n", what.c_str());
  std::abort();
}

// Whether `worker_id` runs rank `rank` of the current attempt `attempt` of
// `job_id`.
bool HoldsRank(Coordinator& c, const std::string& worker_id,
               const std::string& job_id, int attempt, int rank) {
  absl::StatusOr<v1::Job> job = c.GetJob(job_id);
  if (!job.ok() || job->attempt() != attempt) return false;
  for (const v1::RankAssignment& r : job->ranks()) {
    if (r.rank() == rank && r.worker_id() == worker_id) return true;
  }
  return false;
}

// Whether a call naming `task` may act for `rank`: it carries the key of
// the worker it names, and that worker holds the rank in the job's current
// attempt. Judged before the call (which may end the attempt).
bool MayActAs(Coordinator& c, const World& w, bool creds,
              const v1::TaskRef& task, int rank) {
  return creds && w.keys.count(task.worker_id()) > 0 &&
         HoldsRank(c, task.worker_id(), task.job_id(), task.attempt(), rank);
}

void RequireMay(bool may, const char* call, const v1::TaskRef& task, int rank) {
  if (!may) {
    Violation(absl::StrCat(call, " succeeded for rank ", rank, " of ",
                           task.job_id(), " attempt ", task.attempt(),
                           " from worker '", task.worker_id(),
                           "' without its key or without holding that rank"));
  }
}

// A store write succeeded: a key bound to a rank was written by that rank.
void CheckKeyOwner(const std::string& key, const v1::TaskRef& task) {
  const std::optional<int> owner = KeyOwner(key);
  if (owner.has_value() && *owner != task.rank()) {
    Violation(absl::StrCat("rank ", task.rank(), " wrote store key '", key,
                           "' of rank ", *owner));
  }
}

// Runs one record through the gRPC services, as a client's call would
// arrive, and checks an OK answer against the rules above.
// Through the services, a one-byte worker id stands for the n-th known
// worker and a one-byte job id for job n (so that one mutated byte moves a
// call to another worker or job: finding 1's shape is a report of rank 0's
// with rank 1's id).
void Resolve(const World& w, v1::TaskRef* task) {
  if (task->worker_id().size() == 1 && !w.keys.empty()) {
    auto it = w.keys.begin();
    std::advance(it,
                 static_cast<uint8_t>(task->worker_id()[0]) % w.keys.size());
    task->set_worker_id(it->first);
  }
  if (task->job_id().size() == 1) {
    task->set_job_id(absl::StrFormat(
        "job-%06d", 1 + static_cast<uint8_t>(task->job_id()[0]) % 4));
  }
}

// Whether a call's answer was OK, which it may be only with credentials.
bool Succeeded(const grpc::Status& status, bool creds, int call) {
  if (!status.ok()) return false;
  if (!creds) {
    Violation(absl::StrCat("call ", call, " succeeded without credentials"));
  }
  return true;
}

void RunService(World& w, uint8_t selector, const uint8_t* data, size_t size) {
  Coordinator& c = *w.coordinator;
  const bool creds = selector & 0x80;
  const int call = selector & 0x1f;
  const bool user_call = call <= 4 || call == 16 || call == 17 || call == 20;
  grpc::ServerContext ctx;
  grpc::testing::ServerContextTestSpouse spouse(&ctx);
  if (creds) {
    spouse.AddClientMetadata(
        "authorization",
        absl::StrCat("Bearer ", user_call ? kUserToken : kWorkerToken));
  }
  // The key of the worker a request names, when credentials go with it.
  auto with_key = [&](const std::string& worker_id) {
    auto it = w.keys.find(worker_id);
    if (creds && it != w.keys.end()) {
      spouse.AddClientMetadata(kWorkerKeyHeader, it->second);
    }
  };
  switch (call) {
    case 0: {
      v1::SubmitJobRequest r;
      v1::Job out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->SubmitJob(&ctx, &r, &out), creds, call);
      break;
    }
    case 1: {
      v1::GetJobRequest r;
      v1::Job out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->GetJob(&ctx, &r, &out), creds, call);
      break;
    }
    case 2: {
      v1::ListJobsRequest r;
      v1::ListJobsResponse out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->ListJobs(&ctx, &r, &out), creds, call);
      break;
    }
    case 3: {
      v1::CancelJobRequest r;
      v1::Job out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->CancelJob(&ctx, &r, &out), creds, call);
      break;
    }
    case 4: {
      v1::ListWorkersRequest r;
      v1::ListWorkersResponse out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->ListWorkers(&ctx, &r, &out), creds, call);
      break;
    }
    case 5: {
      v1::RegisterWorkerRequest r;
      v1::RegisterWorkerResponse out;
      if (!Parse(data, size, &r)) break;
      if (Succeeded(w.workers->RegisterWorker(&ctx, &r, &out), creds, call)) {
        w.keys[out.worker_id()] = out.worker_key();
      }
      break;
    }
    case 6: {
      v1::HeartbeatRequest r;
      v1::HeartbeatResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      Succeeded(w.workers->ServeHeartbeat(ctx, r, &out), creds, call);
      break;
    }
    case 7: {
      v1::GetShardRequest r;
      v1::GetShardResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool may = MayActAs(c, w, creds, r.task(), r.task().rank());
      if (Succeeded(w.workers->GetShard(&ctx, &r, &out), creds, call)) {
        RequireMay(may, "GetShard", r.task(), r.task().rank());
      }
      break;
    }
    case 8: {
      v1::ReportMetricsRequest r;
      v1::ReportMetricsResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      // Steps of their own rank; evaluations and checkpoints from rank 0.
      std::set<int> ranks;
      for (const v1::StepMetrics& step : r.steps()) ranks.insert(step.rank());
      if (r.eval_size() > 0 || r.checkpoints_size() > 0) ranks.insert(0);
      std::map<int, bool> may;
      for (int rank : ranks) may[rank] = MayActAs(c, w, creds, r.task(), rank);
      if (Succeeded(w.workers->ReportMetrics(&ctx, &r, &out), creds, call)) {
        for (const auto& [rank, ok] : may) {
          RequireMay(ok, "ReportMetrics", r.task(), rank);
        }
      }
      break;
    }
    case 9: {
      v1::CompleteTaskRequest r;
      v1::CompleteTaskResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool may = MayActAs(c, w, creds, r.task(), r.task().rank());
      if (Succeeded(w.workers->CompleteTask(&ctx, &r, &out), creds, call)) {
        RequireMay(may, "CompleteTask", r.task(), r.task().rank());
      }
      break;
    }
    case 10: {
      v1::StoreSetRequest r;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool may = MayActAs(c, w, creds, r.task(), r.task().rank());
      if (Succeeded(w.workers->ServeStoreSet(ctx, r), creds, call)) {
        RequireMay(may, "StoreSet", r.task(), r.task().rank());
        CheckKeyOwner(r.key(), r.task());
      }
      break;
    }
    case 11: {
      v1::StoreGetRequest r;
      v1::StoreGetResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      Succeeded(w.workers->ServeStoreGet(ctx, r, &out), creds, call);
      break;
    }
    case 12: {
      v1::StoreAddRequest r;
      v1::StoreAddResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool may = MayActAs(c, w, creds, r.task(), r.task().rank());
      if (Succeeded(w.workers->ServeStoreAdd(ctx, r, &out), creds, call)) {
        RequireMay(may, "StoreAdd", r.task(), r.task().rank());
        CheckKeyOwner(r.key(), r.task());
      }
      break;
    }
    case 13: {
      v1::StoreWaitRequest r;
      v1::StoreWaitResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      Succeeded(w.workers->StoreWait(&ctx, &r, &out), creds, call);
      break;
    }
    case 14: {
      v1::BarrierRequest r;
      v1::BarrierResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool may = MayActAs(c, w, creds, r.task(), r.task().rank());
      if (Succeeded(w.workers->Barrier(&ctx, &r, &out), creds, call)) {
        RequireMay(may, "Barrier", r.task(), r.task().rank());
      }
      break;
    }
    case 16: {
      v1::DeleteJobRequest r;
      v1::DeleteJobResponse out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->DeleteJob(&ctx, &r, &out), creds, call);
      break;
    }
    case 17: {
      v1::ListSnapshotsRequest r;
      v1::ListSnapshotsResponse out;
      if (!Parse(data, size, &r)) break;
      Succeeded(w.jobs->ListSnapshots(&ctx, &r, &out), creds, call);
      break;
    }
    case 18: {
      // One op of a StoreSession stream, as its stream serves it.
      v1::StoreOp r;
      v1::StoreReply out;
      if (!Parse(data, size, &r)) break;
      v1::TaskRef* task = nullptr;
      switch (r.op_case()) {
        case v1::StoreOp::kSet:
          task = r.mutable_set()->mutable_task();
          break;
        case v1::StoreOp::kGet:
          task = r.mutable_get()->mutable_task();
          break;
        case v1::StoreOp::kAdd:
          task = r.mutable_add()->mutable_task();
          break;
        case v1::StoreOp::kWait:
          task = r.mutable_wait()->mutable_task();
          break;
        case v1::StoreOp::kMultiGet:
          task = r.mutable_multi_get()->mutable_task();
          break;
        default:
          break;
      }
      if (task != nullptr) {
        Resolve(w, task);
        with_key(task->worker_id());
      }
      const bool may =
          task != nullptr && MayActAs(c, w, creds, *task, task->rank());
      const bool answered =
          w.workers->ServeStoreOp(ctx, r, /*may_wait=*/true, &out);
      if (!answered) Violation("a store op that may wait was not answered");
      const grpc::Status status(static_cast<grpc::StatusCode>(out.code()),
                                out.message());
      if (task == nullptr) break;  // sync or empty: no store touched
      if (Succeeded(status, creds, call) && (r.has_set() || r.has_add())) {
        RequireMay(may, "StoreSession", *task, task->rank());
        CheckKeyOwner(r.has_set() ? r.set().key() : r.add().key(), *task);
      }
      break;
    }
    case 19: {
      // A worker leaving: only with its own key.
      v1::DeregisterRequest r;
      v1::DeregisterResponse out;
      if (!Parse(data, size, &r)) break;
      Resolve(w, r.mutable_task());
      with_key(r.task().worker_id());
      const bool own = creds && w.keys.count(r.task().worker_id()) > 0;
      if (Succeeded(w.workers->Deregister(&ctx, &r, &out), creds, call) &&
          !own) {
        Violation(absl::StrCat("Deregister succeeded for worker '",
                               r.task().worker_id(), "' without its key"));
      }
      break;
    }
    case 20: {
      // No model file was uploaded: deleting one never succeeds, whatever
      // the digest says.
      v1::DeleteModelFileRequest r;
      v1::DeleteModelFileResponse out;
      if (!Parse(data, size, &r)) break;
      if (Succeeded(w.jobs->DeleteModelFile(&ctx, &r, &out), creds, call)) {
        Violation("DeleteModelFile succeeded with nothing stored");
      }
      break;
    }
    default:
      return;
  }
}

}  // namespace
}  // namespace gradsync

#ifdef GRADSYNC_FUZZ_SEED_WRITER
// Writes a seed corpus: valid records that reach the handlers' deep paths
// (a step report with a checkpoint, a failed rank and its restart, the
// store, barriers, the failure detector, a second job, a cancel).
namespace gradsync {
namespace {

template <typename Message>
std::string Record(uint8_t selector, const Message& m) {
  const std::string bytes = m.SerializeAsString();
  return std::string(1, static_cast<char>(selector)) +
         std::string(1, static_cast<char>(bytes.size())) + bytes;
}

int WriteSeeds(const std::string& dir) {
  fs::create_directories(dir);
  const std::string job = "job-000001";
  const std::string w1 = "w1-f022", w2 = "w2-f022";
  v1::HeartbeatRequest beat;
  beat.mutable_task()->set_worker_id(w1);
  beat.set_state(v1::WORKER_STATE_RUNNING);
  beat.mutable_task()->set_job_id(job);
  beat.mutable_task()->set_attempt(1);
  v1::GetShardRequest shard;
  shard.mutable_task()->set_worker_id(w1);
  shard.mutable_task()->set_job_id(job);
  shard.mutable_task()->set_attempt(1);
  shard.set_epoch(1);
  v1::ReportMetricsRequest report;
  report.mutable_task()->set_worker_id(w1);
  report.mutable_task()->set_job_id(job);
  report.mutable_task()->set_attempt(1);
  report.add_steps()->set_step(1);
  v1::CheckpointCommit* commit = report.add_checkpoints();
  commit->set_path("/ckpt/model-step-1.pt");
  commit->set_epoch(0);
  commit->set_epoch_batch(1);
  commit->set_step(1);
  v1::CompleteTaskRequest fail;
  fail.mutable_task()->set_worker_id(w2);
  fail.mutable_task()->set_job_id(job);
  fail.mutable_task()->set_attempt(1);
  fail.mutable_task()->set_rank(1);
  fail.set_message("boom");
  v1::StoreSetRequest set;
  set.mutable_task()->set_worker_id(w1);
  set.mutable_task()->set_job_id(job);
  set.mutable_task()->set_attempt(1);
  set.set_key("k");
  set.set_value("v");
  v1::StoreGetRequest get;
  get.mutable_task()->set_job_id(job);
  get.mutable_task()->set_attempt(1);
  get.set_key("k");
  v1::StoreAddRequest add;
  add.mutable_task()->set_job_id(job);
  add.mutable_task()->set_attempt(1);
  add.set_key("n");
  add.set_delta(3);
  v1::StoreWaitRequest wait;
  wait.mutable_task()->set_job_id(job);
  wait.mutable_task()->set_attempt(1);
  wait.add_keys("k");
  wait.add_keys("z");
  v1::BarrierRequest barrier;
  barrier.mutable_task()->set_worker_id(w1);
  barrier.mutable_task()->set_job_id(job);
  barrier.mutable_task()->set_attempt(1);
  barrier.set_name("b");
  v1::SubmitJobRequest submit;
  submit.mutable_spec()->mutable_dataset()->set_path(DataRoot() + "/data");
  submit.mutable_spec()->set_model("lenet");
  submit.mutable_spec()->set_batch_size(1);
  submit.mutable_spec()->mutable_world_size()->set_max_workers(1);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job);
  v1::RegisterWorkerRequest reg;
  reg.set_host("host-b");
  v1::HeartbeatRequest idle;
  idle.mutable_task()->set_worker_id(w2);
  const std::string sweep = std::string("\x0f\x01\xff", 3);
  // Service seeds name w1 and job-000001 by their one-byte forms (Resolve).
  v1::ReportMetricsRequest rank0_commit = report;
  rank0_commit.clear_steps();
  rank0_commit.mutable_task()->set_worker_id(std::string(1, '\0'));
  rank0_commit.mutable_task()->set_job_id(std::string(1, '\0'));
  v1::ReportMetricsRequest rank1_commit = rank0_commit;
  rank1_commit.mutable_task()->set_worker_id(std::string(1, '\1'));
  v1::ListJobsRequest list;
  list.set_page_size(1);
  v1::StoreOp set_op, get_op, add_op;
  *set_op.mutable_set() = set;
  *get_op.mutable_get() = get;
  *add_op.mutable_add() = add;
  const std::map<std::string, std::string> seeds = {
      {"train",
       Record(0x86, beat) + Record(0x87, shard) + Record(0x88, report)},
      {"restart", Record(0x88, report) + Record(0x89, fail) +
                      Record(0x86, beat) + Record(0x86, idle) +
                      Record(0x85, reg) + sweep + Record(0x87, shard)},
      {"store", Record(0x8a, set) + Record(0x0b, get) + Record(0x0c, add) +
                    Record(0x0d, wait) + Record(0x8e, barrier)},
      {"jobs", Record(0x00, submit) + Record(0x03, cancel) +
                   Record(0x04, v1::WatchJobRequest())},
      {"sweep", sweep + Record(0x86, beat)},
      // Through the services (0x40), with credentials (0x80) or without.
      {"service-train",
       Record(0xc6, beat) + Record(0xc7, shard) + Record(0xc8, report)},
      {"service-store", Record(0xca, set) + Record(0xcb, get) +
                            Record(0xcc, add) + Record(0xcd, wait) +
                            Record(0xce, barrier)},
      {"service-store-session",
       Record(0xd2, set_op) + Record(0xd2, get_op) + Record(0xd2, add_op)},
      {"service-no-credentials",
       Record(0x48, report) + Record(0x40, submit) + Record(0x4a, set)},
      // Rank 0 commits a checkpoint (allowed); finding 1's shape: rank 1,
      // with its own key, does the same (refused).
      {"service-rank0-commit", Record(0xc8, rank0_commit)},
      {"service-rank1-commit", Record(0xc8, rank1_commit)},
      {"service-jobs", Record(0xc0, submit) + Record(0xc3, cancel) +
                           Record(0xd0, cancel) + Record(0xc2, list)},
  };
  for (const auto& [name, bytes] : seeds) {
    std::ofstream(fs::path(dir) / name, std::ios::binary) << bytes;
  }
  return 0;
}

}  // namespace
}  // namespace gradsync

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  return gradsync::WriteSeeds(argv[1]);
}
#else
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Invalid UTF-8 in string fields is logged by protobuf on every parse.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gradsync::World world = gradsync::MakeWorld();
  size_t i = 0;
  while (i + 2 <= size) {
    const uint8_t selector = data[i];
    const size_t length = std::min<size_t>(data[i + 1], size - i - 2);
    gradsync::Run(world, selector, data + i + 2, length);
    i += 2 + length;
  }
  world.coordinator->Shutdown();
  return 0;
}
#endif  // GRADSYNC_FUZZ_SEED_WRITER
