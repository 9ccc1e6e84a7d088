// SetComputeThreads reaches the BLAS library's pool as well as LibTorch's
// when libblas.so.3 is OpenBLAS (as deploy/install-deps.sh installs it);
// with another BLAS only LibTorch's is set.
#include "worker/train/compute_threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(ComputeThreadsTest, SetsLibTorchAndOpenBlas) {
  using GetThreads = int (*)();
  auto blas_threads = reinterpret_cast<GetThreads>(
      ::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  for (int threads : {2, 1}) {
    EXPECT_EQ(SetComputeThreads(threads), blas_threads != nullptr);
    EXPECT_EQ(at::get_num_threads(), threads);
    if (blas_threads != nullptr) {
      EXPECT_EQ(blas_threads(), threads);
    }
  }
  if (blas_threads == nullptr) {
    GTEST_SKIP() << "libblas.so.3 is not OpenBLAS here: only LibTorch's "
                    "thread count was checked";
  }
}

}  // namespace
}  // namespace gradsync
