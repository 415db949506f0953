// Counters read from a Prometheus text exposition (a `/metrics` page), and what a Go server's
// counters say about the machine. The benchmarks read the operator's own counters this way, and
// the API server's: its CPU seconds per GiB it allocated is the work-normalized cost of what a
// run asked of it. Where the same run allocates the same bytes every time (the QPS-paced shapes:
// 250 x 8 did within 2 %), a higher ratio is the same work done slower (a shared or throttled
// host); where the bytes themselves vary by run (1,000 x 8: 17-21 GiB, with how kwok and the
// scheduler got through a full cluster) it mixes the machine with the work (docs/benchmarks.md,
// "Drift").
//
// Pure; thread-safe.
#pragma once

#include <string_view>

namespace trainctl::bench {

// The sum of a counter's samples (every label set) in `exposition`; -1 when it has none. A
// sample line is the exact name, then its labels in braces or a space, then the value; comment
// lines (# HELP, # TYPE), longer names that start with `name` and lines whose value is not a
// number in full are not its samples.
double CounterSum(std::string_view exposition, std::string_view name);

// The counter a Go server keeps of every byte it allocated on its heap.
inline constexpr std::string_view kGoAllocatedBytes = "go_memstats_alloc_bytes_total";

inline constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

// CPU seconds per GiB allocated; -1 when either is unknown (negative) or nothing was allocated.
double CpuSecondsPerGib(double cpu_seconds, double allocated_bytes);

}  // namespace trainctl::bench
