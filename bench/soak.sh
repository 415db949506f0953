#!/usr/bin/env bash
# Chaos soak of `trainctl operator` (bench/soak.py): starts a private test cluster (own state
# folder and ports), runs the soak, writes the report, stops the cluster.
# Usage: bench/soak.sh [--jobs 300] [--trainjobs 60] [--kills 40] [--apiserver-restarts 3]
#                      [--window 240] [--seed 1] [--report FILE]
#                      (default report: build/release/soak-report.json)
# Exit status: soak.py's (0 every invariant held, 1 one did not, 2 setup error).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export TRAINCTL_CLUSTER_DIR="$root/build/release/soak-cluster" TRAINCTL_PORT_BASE=29900
export TRAINCTL_BIN="${TRAINCTL_BIN:-$root/build/release/trainctl}" TRAINCTL_REPO="$root"
[[ -x "$TRAINCTL_BIN" ]] || { echo "soak.sh: $TRAINCTL_BIN not built (make build)" >&2; exit 2; }
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/jobset.sh" down >/dev/null 2>&1 || true; "$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
# The JobSet controller for the TrainJobs (--trainjobs).
"$root/hack/cluster/jobset.sh" up
report="$root/build/release/soak-report.json"
for arg in "$@"; do [[ "$arg" == --report ]] && report=""; done
"$root/.venv/bin/python3" "$root/bench/soak.py" --trainjobs 60 ${report:+--report "$report"} "$@"
