// Summaries of repeated benchmark runs (bench/operator_scale.sh --repeat N, issue #40): the
// order of the sides in each round, and per side the median and range of a figure over its
// runs. Ratios against the floor are paired by round (each run against the floor of the same
// round) before they are summarised, so a slow round does not flatter or blame one side.
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace trainctl::bench {

struct Spread {
  double median = -1, low = -1, high = -1;
  int runs = 0;  // known values summarised (0: none)
};

// Median (the mean of the middle two for an even count), lowest and highest of the known
// values; a negative value means unknown and is left out.
Spread SpreadOf(std::vector<double> values);

// "104.5 (98.1–110.5)" with `digits` decimals and `unit` after the median ("" for none), the
// median alone for one run, "—" for none.
std::string FormatSpread(const Spread& spread, int digits, const std::string& unit = "");

// The sides in the order round `round` (0-based) runs them: as given in even rounds, reversed in
// odd ones (A B floor, floor B A, A B floor, …): each side runs as often early in a round as
// late, so drift over the session (page cache, etcd's size, thermal) does not favour one.
std::vector<std::string> RoundOrder(const std::vector<std::string>& sides, int round);

// `value[i] / floor[i]` for each round i where both are known (else unknown, -1).
std::vector<double> PairedRatios(const std::vector<double>& value,
                                 const std::vector<double>& floor);

// The value at or below which `p` (0–1) of the known values lie (nearest rank; -1 for none).
double Percentile(std::vector<double> values, double p);

// One pod's stages in seconds from a run's start (-1: not seen): first seen, first seen bound
// to a node (the scheduler's part), first seen Running (kwok's part).
struct PodStages {
  double created = -1, bound = -1, running = -1;
};

// Where a run's time went between "all pods created" and "all Running": when the last pod was
// bound, and per pod the waits created → bound and bound → Running (p50, p99, max).
struct StageLags {
  double all_bound = -1;
  double bind_p50 = -1, bind_p99 = -1, bind_max = -1;
  double start_p50 = -1, start_p99 = -1, start_max = -1;
};
StageLags SummarizeStages(const std::vector<PodStages>& pods);

}  // namespace trainctl::bench
