// gradsync-bench-allreduce: one rank of an all-reduce benchmark (run one
// process per rank; bench/allreduce_vs_torch.py starts them). Sweeps float32
// sizes from 1 KB to 64 MB with warm-up, checks the result, and prints per
// size the time per all-reduce, algbw = bytes / time and busbw = algbw *
// 2(n-1)/n (the nccl-tests definitions). --transport picks the all-reduce's
// path: shared memory between the ranks (the default for ranks on one
// host; the run fails if the ranks cannot share it) or TCP.
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "foundation/store/file_store.h"
#include "worker/comm/gloo/gloo_communicator.h"

int main(int argc, char** argv) {
  int rank = 0, world = 2, iters_max = 200;
  std::string store_dir;
  int64_t max_bytes = 64 << 20;
  size_t segment_bytes = gradsync::GlooOptions().segment_bytes;
  size_t chunk_bytes = gradsync::GlooOptions().shared_memory_chunk_bytes;
  std::string transport = "shm";
  CLI::App app{"gradsync all-reduce benchmark (one rank)"};
  app.add_option("--rank", rank)->required();
  app.add_option("--world", world)->required();
  app.add_option("--store", store_dir, "FileStore directory")->required();
  app.add_option("--max-bytes", max_bytes)->capture_default_str();
  app.add_option("--iters", iters_max, "at most this many timed iterations")
      ->capture_default_str();
  app.add_option("--segment-bytes", segment_bytes,
                 "gloo all-reduce segment size (GlooOptions)")
      ->capture_default_str();
  app.add_option("--transport", transport, "all-reduce path: shm or tcp")
      ->check(CLI::IsMember({"shm", "tcp"}))
      ->capture_default_str();
  app.add_option("--shm-chunk-bytes", chunk_bytes,
                 "shared-memory all-reduce chunk size (GlooOptions)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  torch::set_num_threads(1);
  gradsync::CommOptions o;
  o.rank = rank;
  o.size = world;
  o.store = std::make_shared<gradsync::FileStore>(store_dir);
  gradsync::GlooOptions gloo;
  gloo.segment_bytes = segment_bytes;
  gloo.shared_memory = transport == "shm";
  gloo.shared_memory_chunk_bytes = chunk_bytes;
  auto comm = gradsync::CreateGlooCommunicator(o, gloo);
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  if (gradsync::AllReducesThroughSharedMemory(**comm) != gloo.shared_memory) {
    std::fprintf(stderr, "the ranks could not share memory\n");
    return 1;
  }
  if (rank == 0) std::printf("bytes,seconds,algbw_GBps,busbw_GBps\n");
  for (int64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = bytes / 4;
    at::Tensor t = torch::full({n}, static_cast<float>(rank + 1));
    for (int i = 0; i < 5; ++i) {  // warm-up
      (void)(*comm)->AllReduce(t, gradsync::ReduceOp::kSum);
    }
    // Fewer iterations for large buffers: about 1 GB moved per size.
    const int iters = static_cast<int>(std::max<int64_t>(
        5, std::min<int64_t>(iters_max, (1LL << 30) / bytes)));
    t.fill_(static_cast<float>(rank + 1));
    const absl::Time start = absl::Now();
    for (int i = 0; i < iters; ++i) {
      if (!(*comm)->AllReduce(t, gradsync::ReduceOp::kSum).ok()) return 1;
    }
    const double s = absl::ToDoubleSeconds(absl::Now() - start) / iters;
    // After `iters` in-place sums of rank+1 values the result is exact in
    // float only while small; check the first all-reduce's arithmetic.
    at::Tensor check = torch::full({n}, static_cast<float>(rank + 1));
    (void)(*comm)->AllReduce(check, gradsync::ReduceOp::kSum);
    if (!torch::allclose(check, torch::full({n}, world * (world + 1) / 2.0f))) {
      std::fprintf(stderr, "wrong result at %ld bytes\n",
                   static_cast<long>(bytes));
      return 1;
    }
    const double algbw = bytes / s / 1e9;
    if (rank == 0) {
      std::printf("%ld,%.9f,%.4f,%.4f\n", static_cast<long>(bytes), s, algbw,
                  algbw * 2.0 * (world - 1) / world);
      std::fflush(stdout);
    }
  }
  return 0;
}
