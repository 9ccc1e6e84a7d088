#include "worker/comm/devices.h"

#include "absl/strings/str_cat.h"
#include "gradsync/config.h"

#if GRADSYNC_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace gradsync {

#if GRADSYNC_WITH_NCCL
namespace {

// nvidia-smi's form: GPU-8-4-4-4-12 hex digits.
std::string UuidString(const cudaUUID_t& uuid) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    absl::StrAppend(&out, absl::Hex(static_cast<unsigned char>(uuid.bytes[i]),
                                    absl::kZeroPad2));
  }
  return out;
}

}  // namespace
#endif

DeviceReport DiscoverDevices() {
  DeviceReport report;
#if GRADSYNC_WITH_NCCL
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    report.cuda_status =
        absl::StrCat("CUDA unavailable: ", cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky error
  } else {
    report.cuda_status = "ok";
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop;
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
      report.cuda.push_back({i, prop.name,
                             static_cast<int64_t>(prop.totalGlobalMem),
                             UuidString(prop.uuid)});
    }
  }
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) report.nccl_version = version;
#else
  report.cuda_status = "built without CUDA/NCCL";
#endif
  return report;
}

std::string NcclVersionString(int version) {
  if (version <= 0) return "not built with NCCL";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return absl::StrCat("NCCL ", version / 10000, ".", (version / 100) % 100, ".",
                      version % 100);
}

}  // namespace gradsync
