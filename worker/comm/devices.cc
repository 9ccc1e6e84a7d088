#include "worker/comm/devices.h"

#include "absl/strings/str_cat.h"
#include "gradsync/config.h"

#if GRADSYNC_WITH_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace gradsync {

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
      report.cuda.push_back(
          {i, prop.name, static_cast<int64_t>(prop.totalGlobalMem)});
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
