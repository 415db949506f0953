#!/usr/bin/env bash
# Latency benchmarks, side by side, on one private cluster (operator_bench_cluster.sh): a failed
# pod's replacement, an operator restart with many pods present, a new job behind many finished
# ones. Each operator in turn, same flags, same identity. Results: docs/benchmarks.md.
#
#   bench/operator_latency.sh --scenario replace|restart|backlog [--impl trainctl,upstream]
#       [--jobs 1000] [--replicas 10] [--finished 5000] [--failures 300] [--rate 10]
#       [--restarts 1] [--threads 4] [--qps 10000] [--burst 20000] [--settle jobs|pods]
#
# What each scenario measures: the comment at the top of bench/operator_latency_bench.cc.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINCTL_BENCH_BIN:-$root/build/release/bench/operator_latency_bench}"
# The benchmark programs are not in the default build: build this one (a no-op when current).
[[ -n "${TRAINCTL_BENCH_BIN:-}" ]] || cmake --build "$root/build/release" --target operator_latency_bench >&2
# shellcheck source=operator_bench_cluster.sh
source "$root/bench/operator_bench_cluster.sh" "$@"
"$bin" --trainctl "$root/build/release/trainctl" "${upstream[@]}" "$@"
