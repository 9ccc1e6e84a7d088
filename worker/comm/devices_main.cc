// gradsync-devices: prints what a worker on this host would register with:
// its CUDA devices and the NCCL it was built with.
#include <torch/cuda.h>

#include <cstdio>

#include "worker/comm/devices.h"

int main() {
  gradsync::DeviceReport r = gradsync::DiscoverDevices();
  std::printf("cuda: %s, %zu device(s)\n", r.cuda_status.c_str(),
              r.cuda.size());
  for (const auto& d : r.cuda) {
    std::printf("  cuda:%d %s, %.1f GiB, %s\n", d.index, d.name.c_str(),
                d.memory_bytes / double(1 << 30), d.uuid.c_str());
  }
  std::printf("libtorch: %s\n", torch::cuda::is_available()
                                    ? "built with CUDA"
                                    : "CPU only (cannot compute on a GPU)");
  std::printf("nccl: %s\n",
              gradsync::NcclVersionString(r.nccl_version).c_str());
  return 0;
}
