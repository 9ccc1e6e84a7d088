#include "worker/train/compute_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>

namespace gradsync {

bool SetComputeThreads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  auto set_blas = reinterpret_cast<SetThreads>(
      ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_blas == nullptr) return false;
  set_blas(threads);
  return true;
}

}  // namespace gradsync
