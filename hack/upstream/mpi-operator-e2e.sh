#!/usr/bin/env bash
# mpi-operator's own end-to-end suite, unmodified (github.com/kubeflow/mpi-operator@v0.8.0,
# test/e2e, built from the Go module proxy with `go test -c`), against `trainctl operator` on
# the real node (`make mpi-operator-e2e`). It starts the node cluster (hack/cluster/up.sh with
# TRAINCTL_REAL_NODE=1, the node suites' state folder and ports: not while they run), deploys
# the operator from manifests/ as the node suites do, builds the stand-ins for the suite's
# images (images.sh mpi-pi: mpioperator/mpi-pi:openmpi and :mpich, compiled here from the
# module's pi.cc), runs the suite with USE_EXISTING_CLUSTER and USE_EXISTING_OPERATOR, and
# stops the cluster.
#
# Skipped, and why: Intel MPI (not packaged for Debian), scheduler-plugins and Volcano (not
# served here), the custom cluster-domain spec (it edits mpi-operator's own Deployment).
# Exit status: the suite's. Results: docs/compatibility.md.
#   Environment: TRAINCTL_MPI_OPERATOR_VERSION (default v0.8.0), TRAINCTL_CACHE.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../cluster/lib.sh
source "$root/hack/cluster/lib.sh"
# shellcheck source=lib.sh
source "$root/hack/upstream/lib.sh"

version="${TRAINCTL_MPI_OPERATOR_VERSION:-v0.8.0}"
module="github.com/kubeflow/mpi-operator"
dir="$(cache_root)/upstream/mpi-operator-$version"
suite="$dir/mpi-operator-e2e.test"
node_suite_mode mpi-operator-e2e.sh all

# The suite's test binary, once per version.
src="$(module_dir "$module" "$version")"
build_suite "$src" ./test/e2e "$suite"

trap '"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
"$root/hack/cluster/up.sh"
"$root/hack/cluster/images.sh" --own-registry mpi-pi
(cd "$root/test/integration/node" &&
  "$root/.venv/bin/python3" -c 'import node_harness; node_harness.deploy_operator()')
export KUBECONFIG="$TRAINCTL_CLUSTER_DIR/kubeconfig"
kubectl="$(cluster_bin_dir)/kubectl"
# v2beta1 is converted by the operator's webhook once the operator has written its CA.
for _ in $(seq 60); do
  [[ -n "$("$kubectl" get crd mpijobs.kubeflow.org \
    -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')" ]] && break
  sleep 2
done
USE_EXISTING_CLUSTER=true USE_EXISTING_OPERATOR=true "$suite" -ginkgo.noColor -ginkgo.v \
  -ginkgo.skip='Intel|scheduler-plugins|volcano|custom cluster-domain'
