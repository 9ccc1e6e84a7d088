// Snapshot service throughput benchmark (not a test).
//
// Writes a real checkpoint of a model (default resnet18, about 45 MB: the
// worker's own WriteCheckpoint with SGD, so no optimizer state), starts a
// coordinator in this process on a loopback port with a state directory,
// registers one worker and runs a 1-rank job so that worker is rank 0, then
// alternates, for --rounds rounds:
//   upload:   what rank 0 does per checkpoint (WorkerService.UploadSnapshot
//             of the checkpoint file, read in 1 MiB chunks as they go and
//             hashed on the way, the SHA-256 on the last chunk, until the
//             coordinator has verified, synced and stored it);
//   download: what a restarted rank 0 does (WorkerService.DownloadSnapshot,
//             the coordinator verifying the file as it serves it, the
//             worker checking order, size and SHA-256);
//   tcp:      the same bytes over a bare loopback TCP connection (1 MiB
//             write()s; the receiver read()s them into one reused 1 MiB
//             buffer, as iperf does, and acknowledges the last byte): the
//             transport's ceiling on this machine.
// Prints MB/s (10^6 bytes/s) of each round and the medians with the ratios
// upload/tcp and download/tcp (issue 7's goal: at least 0.5 each way).
// Also measured each round: SHA-256 over the snapshot and fsync of its
// file, the work that cannot overlap the transfer, and the ceilings they
// put on each direction (upload: hash + fsync; download: hash).
//
// Usage: gradsync-bench-snapshot [--model resnet18] [--rounds 5]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/server/auth.h"
#include "coordinator/server/server.h"
#include "coordinator/wire/secrets.h"
#include "coordinator/wire/sha256.h"
#include "coordinator/wire/snapshot_stream.h"
#include "gradsync/v1/job_service.grpc.pb.h"
#include "gradsync/v1/worker_service.grpc.pb.h"
#include "worker/model/builtin_model.h"
#include "worker/model/checkpoint.h"

namespace gradsync::bench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "snapshot bench: %s\n", what.c_str());
  std::exit(1);
}

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& key,
                                         int seconds = 60) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(seconds));
  if (!key.empty()) ctx->AddMetadata(kWorkerKeyHeader, key);
  return ctx;
}

// The bytes of a real checkpoint of `model_name` (28x28x1 input, 10
// classes), written by the worker's checkpoint code.
std::string CheckpointBytes(const std::string& model_name,
                            const fs::path& dir) {
  auto model = MakeBuiltinModel(model_name, ModelShape());
  if (!model.ok()) Die(std::string(model.status().message()));
  torch::optim::SGD sgd(TrainableParameters(**model),
                        torch::optim::SGDOptions(0.1));
  TrainPosition position;
  position.step = 1;
  auto path =
      WriteCheckpoint(**model, sgd, position,
                      {{"RANK", "0"}, {"WORLD_SIZE", "1"}}, dir.string());
  if (!path.ok()) Die(std::string(path.status().message()));
  auto bytes = ReadFileBytes(*path);
  if (!bytes.ok()) Die(std::string(bytes.status().message()));
  return std::string(bytes->begin(), bytes->end());
}

struct Rank0 {
  std::string job_id, worker_id, key;
  int attempt = 0;
};

// Registers a worker, submits a 1-rank job over `dataset` and acknowledges
// its assignment: the worker is rank 0 of the job's current attempt.
Rank0 StartJob(v1::WorkerService::Stub& workers, v1::JobService::Stub& jobs,
               const std::string& dataset) {
  v1::RegisterWorkerRequest reg;
  reg.set_host("bench-host");
  v1::RegisterWorkerResponse id;
  grpc::Status s = workers.RegisterWorker(Ctx("").get(), reg, &id);
  if (!s.ok()) Die("register: " + s.error_message());
  v1::SubmitJobRequest submit;
  v1::JobSpec* spec = submit.mutable_spec();
  spec->set_name("snapshot-bench");
  spec->mutable_dataset()->set_path(dataset);
  spec->set_model("mlp");
  spec->set_batch_size(1);
  spec->mutable_world_size()->set_max_workers(1);
  v1::Job job;
  s = jobs.SubmitJob(Ctx("").get(), submit, &job);
  if (!s.ok()) Die("submit: " + s.error_message());
  v1::HeartbeatRequest hb;
  hb.mutable_task()->set_worker_id(id.worker_id());
  v1::HeartbeatResponse r;
  s = workers.Heartbeat(Ctx(id.worker_key()).get(), hb, &r);
  if (!s.ok() || !r.has_assignment()) Die("no assignment for the worker");
  Rank0 rank0{r.assignment().job_id(), id.worker_id(), id.worker_key(),
              r.assignment().attempt()};
  hb.set_state(v1::WORKER_STATE_RUNNING);
  hb.mutable_task()->set_job_id(rank0.job_id);
  hb.mutable_task()->set_attempt(rank0.attempt);
  s = workers.Heartbeat(Ctx(rank0.key).get(), hb, &r);
  if (!s.ok()) Die("acknowledge: " + s.error_message());
  return rank0;
}

// Rank 0's upload of the checkpoint file `path` as `step`, as the agent.
void Upload(v1::WorkerService::Stub& workers, const Rank0& rank0,
            const std::string& path, int64_t step) {
  auto ctx = Ctx(rank0.key);
  v1::SnapshotMeta stored;
  auto writer = workers.UploadSnapshot(ctx.get(), &stored);
  v1::SnapshotMeta meta;
  meta.set_job_id(rank0.job_id);
  meta.set_step(step);
  meta.set_accuracy(-1);
  absl::Status sent = WriteSnapshotFile(
      path, meta, rank0.worker_id, rank0.attempt,
      [&](const v1::SnapshotChunk& chunk) { return writer->Write(chunk); });
  if (!sent.ok() && !absl::IsCancelled(sent)) Die(sent.ToString());
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  if (!s.ok()) Die("upload: " + s.error_message());
}

// A restarted rank 0's download of checkpoint `step`; returns its size.
size_t Download(v1::WorkerService::Stub& workers, const Rank0& rank0,
                int64_t step) {
  v1::PullSnapshotRequest request;
  request.set_job_id(rank0.job_id);
  request.set_step(step);
  request.set_has_step(true);
  request.set_worker_id(rank0.worker_id);
  request.set_attempt(rank0.attempt);
  auto ctx = Ctx(rank0.key);
  auto reader = workers.DownloadSnapshot(ctx.get(), request);
  v1::SnapshotMeta meta;
  std::string data;
  absl::Status s = ReadSnapshotChunks(*ctx, *reader, &meta, &data);
  if (!s.ok()) Die("download: " + std::string(s.message()));
  return data.size();
}

// Sends `bytes` over a fresh loopback TCP connection in 1 MiB writes; the
// receiver reads them into a reused 1 MiB buffer (keeping nothing), then
// sends one byte back. Timed from connect to that byte.
double TcpSeconds(const std::string& bytes) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 ||
      bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("tcp listener");
  }
  std::thread receiver([&] {
    const int fd = accept(listener, nullptr, nullptr);
    std::string buffer(kSnapshotChunkBytes, '\0');
    for (size_t got = 0; got < bytes.size();) {
      const ssize_t n = read(fd, buffer.data(), buffer.size());
      if (n <= 0) Die("tcp read");
      got += static_cast<size_t>(n);
    }
    const char ack = 1;
    if (write(fd, &ack, 1) != 1) Die("tcp ack");
    close(fd);
  });
  const absl::Time start = absl::Now();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die("tcp connect");
  }
  for (size_t off = 0; off < bytes.size();) {
    const size_t n = std::min<size_t>(kSnapshotChunkBytes, bytes.size() - off);
    const ssize_t w = write(fd, bytes.data() + off, n);
    if (w <= 0) Die("tcp write");
    off += static_cast<size_t>(w);
  }
  char ack = 0;
  if (read(fd, &ack, 1) != 1) Die("tcp ack read");
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  receiver.join();
  close(fd);
  close(listener);
  return seconds;
}

// Writes `data` to `path` and returns the seconds its fsync took (what the
// coordinator pays once per stored snapshot).
double WriteSyncedSeconds(const std::string& path, const std::string& data) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) Die("open " + path);
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n <= 0) Die("write " + path);
    off += static_cast<size_t>(n);
  }
  const absl::Time start = absl::Now();
  if (fsync(fd) != 0) Die("fsync " + path);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  close(fd);
  return seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int Run(const std::string& model_name, int rounds) {
  const fs::path dir =
      fs::temp_directory_path() / absl::StrCat("gradsync_snapbench_", getpid());
  fs::create_directories(dir / "data" / "train" / "a");
  std::ofstream(dir / "data" / "train" / "a" / "0.png") << "x";
  const std::string bytes = CheckpointBytes(model_name, dir / "ckpt");
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  std::printf("%s checkpoint: %.1f MB\n", model_name.c_str(), mb);

  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.state_dir = (dir / "state").string();
  auto server = CoordinatorServer::Start(options);
  if (!server.ok()) Die(std::string(server.status().message()));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(
      (*server)->local_address(), grpc::InsecureChannelCredentials(), args);
  auto workers = v1::WorkerService::NewStub(channel);
  auto jobs = v1::JobService::NewStub(channel);
  const Rank0 rank0 = StartJob(*workers, *jobs, (dir / "data").string());
  // Rank 0 stays alive for the coordinator: a heartbeat every 500 ms.
  std::atomic<bool> stop{false};
  std::thread beater([&] {
    v1::HeartbeatRequest hb;
    hb.mutable_task()->set_worker_id(rank0.worker_id);
    hb.set_state(v1::WORKER_STATE_RUNNING);
    hb.mutable_task()->set_job_id(rank0.job_id);
    hb.mutable_task()->set_attempt(rank0.attempt);
    while (!stop) {
      v1::HeartbeatResponse ignored;
      workers->Heartbeat(Ctx(rank0.key).get(), hb, &ignored);
      for (int i = 0; i < 50 && !stop; ++i)
        absl::SleepFor(absl::Milliseconds(10));
    }
  });

  std::vector<double> up, down, tcp, sha, sync;
  std::printf("%-6s %12s %14s %9s %12s %9s\n", "round", "upload MB/s",
              "download MB/s", "tcp MB/s", "sha256 MB/s", "fsync ms");
  for (int round = 0; round <= rounds; ++round) {  // round 0: warm-up
    // Each round a distinct snapshot (one byte differs: a new SHA-256).
    std::string data = bytes;
    data.back() = static_cast<char>(round);
    const std::string file =
        (dir / absl::StrCat("round-", round, ".pt")).string();
    const double f = WriteSyncedSeconds(file, data);
    absl::Time start = absl::Now();
    if (Sha256Hex(data).empty()) Die("sha256");
    const double h = mb / absl::ToDoubleSeconds(absl::Now() - start);
    start = absl::Now();
    Upload(*workers, rank0, file, round + 1);
    const double u = mb / absl::ToDoubleSeconds(absl::Now() - start);
    start = absl::Now();
    if (Download(*workers, rank0, round + 1) != data.size()) {
      Die("download size");
    }
    const double d = mb / absl::ToDoubleSeconds(absl::Now() - start);
    const double t = mb / TcpSeconds(data);
    std::printf("%-6s %12.0f %14.0f %9.0f %12.0f %9.1f\n",
                round == 0 ? "warmup" : std::to_string(round).c_str(), u, d, t,
                h, f * 1e3);
    if (round == 0) continue;
    up.push_back(u);
    down.push_back(d);
    tcp.push_back(t);
    sha.push_back(h);
    sync.push_back(f);
  }
  const double u = Median(up), d = Median(down), t = Median(tcp);
  // Work that cannot overlap the transfer: the coordinator hashes every
  // byte it receives and syncs the file after the last one; a download's
  // last chunk leaves only after the whole file was hashed.
  const double up_ceiling = mb / (mb / Median(sha) + Median(sync));
  const double down_ceiling = Median(sha);
  std::printf(
      "median: upload %.0f MB/s, download %.0f MB/s, bare loopback TCP %.0f "
      "MB/s\n"
      "ratio to TCP: upload %.2f, download %.2f (goal >= 0.5)\n"
      "serial work per snapshot: SHA-256 at %.0f MB/s, fsync %.1f ms -> "
      "ceilings upload %.0f MB/s, download %.0f MB/s\n"
      "ratio to those ceilings: upload %.2f, download %.2f\n",
      u, d, t, u / t, d / t, Median(sha), Median(sync) * 1e3, up_ceiling,
      down_ceiling, u / up_ceiling, d / down_ceiling);
  stop = true;
  beater.join();
  (*server)->Shutdown();
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace gradsync::bench

int main(int argc, char** argv) {
  CLI::App app("gradsync snapshot upload/download vs bare loopback TCP");
  std::string model = "resnet18";
  int rounds = 5;
  app.add_option("--model", model, "model whose checkpoint is moved");
  app.add_option("--rounds", rounds, "measured rounds (after one warm-up)")
      ->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  return gradsync::bench::Run(model, rounds);
}
