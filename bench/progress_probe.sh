#!/usr/bin/env bash
# API cost of the progress timeout on the cluster (docs/benchmarks.md): starts a private test
# cluster (own state dir and ports), creates N running jobs that carry
# trainctl.dev/progress-timeout-seconds, runs the operator once per probe budget and counts the
# pod log requests it sends in a measured window. Stops the cluster at the end.
# Usage: bench/progress_probe.sh [--jobs 1000] [--timeout 600] [--window 180]
#                                [--budgets 0,120]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
export TRAINCTL_BIN="$root/build/release/trainctl" TRAINCTL_REPO="$root"
"$root/.venv/bin/python3" "$root/bench/progress_probe.py" "$@"
