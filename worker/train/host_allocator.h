// KeepFreedHostMemory: tells glibc's malloc to keep freed memory in the
// process rather than hand it back to the kernel after every step.
//
// LibTorch allocates CPU tensors with malloc. By default glibc serves
// blocks above its mmap threshold (128 KiB, raised as blocks are freed)
// with fresh mappings and returns the top of the heap past 128 KiB of free
// space, so each training step's activations and gradients fault their
// pages in again: measured on fashion_cnn (2 ranks on 2 cores) a step took
// 88 ms with the defaults and 80 ms with this (bench/README.md). A caching
// allocator, as PyTorch has on CUDA, avoids the same cost. Here: blocks up
// to 32 MiB (glibc's largest threshold) come from the heap, and up to
// 1 GiB of free heap is kept. The process's memory then stays at its peak
// use instead of shrinking between steps.
//
// Process-wide; call once at start-up, before threads allocate.
#pragma once

namespace gradsync {

// True when glibc accepted both settings (false elsewhere).
bool KeepFreedHostMemory();

}  // namespace gradsync
