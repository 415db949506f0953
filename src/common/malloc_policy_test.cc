#include "common/malloc_policy.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace trainctl {
namespace {

TEST(MallocPolicyTest, FixesTheThresholdUnlessTheUserTunedIt) {
  EXPECT_EQ(MmapThresholdToSet(nullptr, nullptr), kLargeBufferBytes);
  EXPECT_EQ(MmapThresholdToSet(nullptr, "glibc.malloc.arena_max=2"), kLargeBufferBytes);
  EXPECT_EQ(MmapThresholdToSet("1048576", nullptr), std::nullopt);
  EXPECT_EQ(MmapThresholdToSet(nullptr, "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1"),
            std::nullopt);
  EXPECT_FALSE(SetMmapThreshold(size_t{1} << 40)) << "beyond what mallopt takes";
}

// With the threshold fixed, a buffer of several MiB is still mapped on its own after one like it
// was freed; glibc's moving threshold would have put the second one in the heap.
TEST(MallocPolicyTest, ALargeBufferFreedLeavesTheNextOneMappedOnItsOwn) {
  if (!SetMmapThreshold(kLargeBufferBytes))
    GTEST_SKIP() << "this malloc (a sanitizer's) does not take mallopt";
  constexpr size_t kBytes = 6u << 20;
  auto mapped_with = [](size_t bytes) {
    size_t before = mallinfo2().hblkhd;
    char* p = static_cast<char*>(std::malloc(bytes));
    std::memset(p, 1, bytes);
    asm volatile("" : : "r"(p) : "memory");  // the buffer is used: the compiler keeps it
    size_t grown = mallinfo2().hblkhd - before;
    std::free(p);
    return grown;
  };
  EXPECT_GE(mapped_with(kBytes), kBytes);
  EXPECT_GE(mapped_with(kBytes), kBytes) << "the freed buffer did not move the threshold";
}

}  // namespace
}  // namespace trainctl
