#!/usr/bin/env bash
# The runtime status endpoint's cost on the cluster (docs/benchmarks.md): starts a private test
# cluster (own state dir and ports) with the JobSet controller (TrainJobs are served with it),
# runs bench/status_endpoint.py cluster, stops both.
# Usage: bench/status_endpoint.sh [--rate 1000] [--seconds 10]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/jobset.sh" down >/dev/null 2>&1 || true
      "$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
"$root/hack/cluster/jobset.sh" up
export TRAINCTL_BIN="$root/build/release/trainctl" TRAINCTL_REPO="$root"
"$root/.venv/bin/python3" "$root/bench/status_endpoint.py" cluster "$@"
