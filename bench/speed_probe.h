// The machine's speed before a benchmark run: a fixed piece of single-threaded work (sorting a
// fixed pseudo-random array of 64-bit keys, larger than the CPU's caches), timed. It tells a run
// on a slower machine or a slower hour (another CPU kind, a throttled or shared host) from one
// that is slow for the run's own reasons. On 2026-11-28 it stayed at 0.573-0.630 s while the
// 1,000 x 8 floor spanned 275-292 s, and that floor had been 203-235 s hours earlier: the drift
// does not show in an idle core's speed (docs/benchmarks.md, "Drift").
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
