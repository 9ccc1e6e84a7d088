// LimitHostTensorMemory: a ceiling on the bytes this process's CPU tensors
// hold (the worker's memory budget). A model's forward may allocate what
// it likes (the checks of script_module_check.h allow tensor ops); without
// a ceiling an allocation that the kernel grants lazily (or many small
// ones kept alive) grows the worker until the kernel's OOM killer ends it,
// or another process on the host. With one, the allocation that would
// cross it throws LibTorch's error instead ("out of memory: ...", naming
// the request, the bytes in use and the limit), which the trainer turns
// into RESOURCE_EXHAUSTED (loader/exception_status.h): the step fails, the
// task fails with that reason and the worker stays alive and idle.
//
// It wraps LibTorch's CPU allocator (c10::SetCPUAllocator) with one that
// counts the bytes it hands out and takes back; tensors allocated before
// it was installed are not counted. GPU memory is not counted: the CUDA
// caching allocator already fails an oversized allocation with an error.
// Memory outside tensors (the BLAS library's buffers, the interpreter's
// own objects) is not counted either.
//
// Thread safety: the allocator is thread-safe; call LimitHostTensorMemory
// at start-up, or between tasks (it changes only the limit once installed).
#pragma once

#include <cstdint>

namespace gradsync {

// Installs the counting allocator on the first call; every call sets the
// limit. `limit_bytes` <= 0: no limit (bytes are still counted).
void LimitHostTensorMemory(int64_t limit_bytes);

// CPU tensor bytes allocated through the counting allocator and not yet
// freed (0 before it is installed).
int64_t HostTensorBytesInUse();

// A default limit for `processes` processes sharing this host: 80% of the
// memory this process may use (the smaller of physical memory and its
// cgroup's memory limit), divided among them.
int64_t DefaultHostTensorLimit(int processes = 1);

}  // namespace gradsync
