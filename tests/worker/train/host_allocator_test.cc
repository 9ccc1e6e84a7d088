// KeepFreedHostMemory: a 24 MiB block, which glibc maps afresh by default,
// comes from the heap afterwards, and freeing it keeps the memory.
#include "worker/train/host_allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace gradsync {
namespace {

size_t MappedBytes() { return ::mallinfo2().hblkhd; }

TEST(HostAllocatorTest, LargeBlocksComeFromTheHeapAndStay) {
  constexpr size_t kBlock = 24 << 20;
  const size_t mapped_before = MappedBytes();
  // glibc's default: a block this large is its own mapping. (Not freed
  // before the end: freeing it would raise glibc's threshold by itself.)
  void* fresh = std::malloc(kBlock);
  std::memset(fresh, 1, kBlock);
  EXPECT_GE(MappedBytes(), mapped_before + kBlock);

  ASSERT_TRUE(KeepFreedHostMemory());
  const size_t mapped = MappedBytes();
  void* kept = std::malloc(kBlock);
  std::memset(kept, 2, kBlock);
  EXPECT_LT(MappedBytes(), mapped + kBlock);  // served by the heap
  const size_t heap = ::mallinfo2().arena;
  std::free(kept);
  EXPECT_EQ(::mallinfo2().arena, heap);  // not trimmed back
  std::free(fresh);
}

}  // namespace
}  // namespace gradsync
