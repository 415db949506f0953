#!/usr/bin/env bash
# Starts a private test cluster (hack/cluster, own state dir and ports), runs
# kube_request_bench against it, stops it. Usage: bench/kube_request_bench.sh [N] [T] [W] [D]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINCTL_BENCH_BIN:-$root/build/release/bench/kube_request_bench}"
# The benchmark programs are not in the default build: build this one (a no-op when current).
[[ -n "${TRAINCTL_BENCH_BIN:-}" ]] || cmake --build "$root/build/release" --target kube_request_bench >&2
export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
"$bin" "$@"
