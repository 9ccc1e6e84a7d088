// libFuzzer target: arbitrary bytes as requests to the coordinator's
// handlers (built with clang, AddressSanitizer and LeakSanitizer by
// tests/fuzz/run_fuzz.sh).
//
// Each input runs against a fresh Coordinator that already has two
// registered workers running a 2-rank job (so handlers reach their deep
// paths). The input is a sequence of records
//   [selector: 1 byte][length: 1 byte][length bytes]
// where the selector's low 5 bits pick a handler and the bytes are parsed
// as its request message (records that do not parse are skipped). With the
// selector's top bit set, worker calls carry the real key of the worker
// they name, so authorization passes and the handler itself runs.
// Worker-side calls go through Coordinator::AuthorizeWorker first, as the
// gRPC service does, and then run whatever it said (defence in depth: the
// handlers must hold up on their own). Blocking calls wait at most 5 ms.
// Dataset paths are confined to a data root, so no input walks the disk.
//
// Nothing may crash, leak, or hang (libFuzzer's -timeout).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/control/coordinator.h"
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

struct World {
  std::unique_ptr<Coordinator> coordinator;
  std::map<std::string, std::string> keys;  // worker id -> key
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

// Runs one record against the world.
void Run(World& w, uint8_t selector, const uint8_t* data, size_t size) {
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
      if (Parse(data, size, &r)) (void)c.GetJob(r.job_id());
      break;
    }
    case 2: {
      v1::ListJobsRequest r;
      if (Parse(data, size, &r)) (void)c.ListJobs(r.limit());
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
    default:
      break;
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
