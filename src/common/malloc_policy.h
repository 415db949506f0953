// How trainctl asks glibc's malloc to treat large buffers, decided once at start (main).
//
// glibc serves an allocation of at least its mmap threshold (128 KiB at start) with a mapping of
// its own and unmaps it when freed. But each such free raises the threshold to the freed size
// (up to 32 MiB): once the first list page and its parser buffers were freed, the next pages'
// buffers of several MiB came from the heap arenas instead, where what is freed stays resident,
// split up by the small long-lived objects placed in it, in one arena per thread that touched it.
// At an operator start with 10,000 pods this made the peak RSS 80-99 MiB; with the threshold
// held at 128 KiB, 48 MiB (docs/benchmarks.md). Setting the threshold explicitly stops glibc
// from moving it.
//
// - MmapThresholdToSet decides: kLargeBufferBytes, or nullopt when the user tuned it already
//   (MALLOC_MMAP_THRESHOLD_, or glibc.malloc.mmap_threshold in GLIBC_TUNABLES; both are glibc's
//   own settings and win). Pure.
// - SetMmapThreshold applies it (mallopt); false when malloc refused.
#pragma once

#include <cstddef>
#include <optional>

namespace trainctl {

inline constexpr size_t kLargeBufferBytes = 128 * 1024;

// `mmap_threshold_env` and `tunables_env`: the values of MALLOC_MMAP_THRESHOLD_ and
// GLIBC_TUNABLES, nullptr when unset.
std::optional<size_t> MmapThresholdToSet(const char* mmap_threshold_env, const char* tunables_env);

bool SetMmapThreshold(size_t bytes);

}  // namespace trainctl
