// SetComputeThreads: how many threads one rank's tensor operations use.
//
// LibTorch's at::set_num_threads sizes its own (OpenMP) pool but not the
// BLAS library's: Debian's LibTorch calls whatever provides libblas.so.3,
// and OpenBLAS's pthread build starts one thread per core unless told
// otherwise, so two ranks on a 2-core host would each run two BLAS threads
// (what torchrun avoids by setting OMP_NUM_THREADS=1 for every rank, which
// OpenBLAS also reads). This sets both: OpenBLAS through
// openblas_set_num_threads when the loaded BLAS has it (looked up at run
// time; other BLAS libraries are left alone).
//
// Process-wide; call from the thread that runs the rank's compute (OpenMP's
// thread count is per calling thread).
#pragma once

namespace gradsync {

// `threads` >= 1. Returns true when a BLAS thread setting was found and set.
bool SetComputeThreads(int threads);

}  // namespace gradsync
