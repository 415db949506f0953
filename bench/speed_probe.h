// The machine's speed before a benchmark run: a fixed piece of single-threaded work (sorting a
// fixed pseudo-random array of 64-bit keys, larger than the CPU's caches), timed. The same work
// takes longer when the host gives the VM less (other guests on the same cores, caches or
// memory bandwidth, which the guest's steal time does not count), so a run's probe says how
// fast the machine was when it started: on 2026-11-28 the floor's "all Running" at 1,000 × 8
// went 203 → 276 s on fresh clusters and on one reused cluster alike, and its API server spent
// CPU-seconds on the same 16,000 creates in proportion (docs/benchmarks.md).
//
// ProbeWork is pure and deterministic (its checksum is the same on every machine); TimeProbe
// reads the steady clock around it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainctl::bench {

// Sorts `keys` pseudo-random 64-bit keys (a fixed seed) and returns a checksum of the sorted
// order, so that the work cannot be left out.
uint64_t ProbeWork(size_t keys);

// The default size: 8 Mi keys (64 MiB), about a second on the 2-core kind of docs/benchmarks.md.
inline constexpr size_t kProbeKeys = size_t{8} << 20;

struct ProbeTiming {
  double seconds = 0;  // the fastest of the tries
  uint64_t checksum = 0;
};

// ProbeWork(`keys`) `tries` times (at least once); the fastest try's seconds: a short stall
// (a timer tick, a page fault) does not count, a host that stays busy does.
ProbeTiming TimeProbe(size_t keys = kProbeKeys, int tries = 3);

}  // namespace trainctl::bench
