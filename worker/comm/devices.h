// Accelerator discovery for worker registration: which CUDA devices this
// host has and which NCCL it was built with. Detects at run time, never
// assumes: without a GPU (or driver) CUDA reports an error and the list is
// empty, while the NCCL version still reads.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

struct CudaDevice {
  int index = 0;  // this process's CUDA index (CUDA_VISIBLE_DEVICES applied)
  std::string name;
  int64_t memory_bytes = 0;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-...", as nvidia-smi -L prints it
};

struct DeviceReport {
  std::vector<CudaDevice> cuda;  // empty when no usable GPU
  std::string cuda_status;       // "ok" or why CUDA is unusable
  int nccl_version = 0;          // e.g. 22809; 0 when built without NCCL
};

// CUDA devices (name, memory) and the NCCL version. Never fails: problems
// are described in cuda_status.
DeviceReport DiscoverDevices();

// "NCCL 2.28.9" or "not built with NCCL".
std::string NcclVersionString(int version);

}  // namespace gradsync
