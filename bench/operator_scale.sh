#!/usr/bin/env bash
# Scale benchmark: starts a private test cluster (own state dir and ports), installs the CRDs,
# runs operator_scale_bench (operator run, then the API floor), stops the cluster.
# Usage: bench/operator_scale.sh [--jobs 1000] [--replicas 8] [--qps 20] [--burst 30]
#                                [--threads 4] [--run-seconds 30]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINCTL_BENCH_BIN:-$root/build/release/bench/operator_scale_bench}"
export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
source "$root/hack/cluster/lib.sh"
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
kubectl="$(cluster_bin_dir)/kubectl --kubeconfig $TRAINCTL_CLUSTER_DIR/kubeconfig"
$kubectl apply --server-side -f "$root/manifests/crds" >/dev/null
$kubectl wait --for=condition=Established --timeout=60s crd --all >/dev/null
"$bin" --trainctl "$root/build/release/trainctl" "$@"
