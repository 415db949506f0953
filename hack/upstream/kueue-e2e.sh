#!/usr/bin/env bash
# Kueue's own end-to-end suite, unmodified (sigs.k8s.io/kueue@v0.17.0, test/e2e/singlecluster,
# built from the Go module proxy with `go test -c`): its Kubeflow specs, against
# `trainctl operator` on the real node.
#
#   kueue-e2e.sh build   the suite's test binary, once per version, into the cache (niced; a
#                        second caller waits for the first through a lock). `make test`'s
#                        background chain runs it.
#   kueue-e2e.sh run     against the node cluster already running (CTest's node fixture:
#                        `integration.node.kueue_e2e`, label kueue): stops Kueue as a process
#                        (the node-kueue fixture's) if it runs, installs Kueue as upstream's
#                        release does (its install.yaml as hack/kueue/build.sh rendered it,
#                        unchanged but for the image, built here, and the visibility
#                        APIServices, which the test cluster does not aggregate), deploys the
#                        operator under upstream's names (overlays/kubeflow: the suite waits for
#                        the Deployment kubeflow/training-operator), builds the images
#                        (images.sh kueue-e2e: Kueue's, and agnhost built from Kubernetes' own
#                        source), runs the suite, then removes what it installed (not the CRDs).
#   kueue-e2e.sh [all]   `make kueue-e2e`: build, then starts the node cluster (the node suites'
#                        state folder and ports: not while they run), runs as above and stops it.
#
# Run: the specs labelled feature:pytorchjob and feature:jaxjob. Not run: the TrainJob specs
# (they wait for upstream Trainer's controller Deployment kubeflow-system/kubeflow-trainer-
# controller-manager and JobSet's as Deployments; here the operator serves TrainJobs itself and
# JobSet runs as a process), and every spec of kinds trainctl does not serve. Exit status: the
# suite's. Results: docs/compatibility.md.
#   Environment: TRAINCTL_KUEUE_VERSION (default v0.17.0), TRAINCTL_CACHE,
#   TRAINCTL_KUEUE_E2E_LABELS (a ginkgo label filter replacing the default).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../cluster/lib.sh
source "$root/hack/cluster/lib.sh"

version="${TRAINCTL_KUEUE_VERSION:-v0.17.0}"
module="sigs.k8s.io/kueue"
dir="$(cache_root)/kueue/$version"
suite="$dir/singlecluster-e2e.test"
labels="${TRAINCTL_KUEUE_E2E_LABELS:-feature:pytorchjob || feature:jaxjob}"
mode="${1:-all}"
case "$mode" in build | run | all) ;; *) die "usage: kueue-e2e.sh [build|run|all]" ;; esac
if [[ "$mode" == all ]]; then
  export TRAINCTL_CLUSTER_DIR="$root/build/release/node-cluster" TRAINCTL_PORT_BASE=29600 \
    TRAINCTL_REAL_NODE=1 TRAINCTL_KWOK_NODES=0
fi
if [[ "$mode" != build ]]; then
  export TRAINCTL_BIN="${TRAINCTL_BIN:-$root/build/release/trainctl}" TRAINCTL_REPO="$root"
  [[ -x "$TRAINCTL_BIN" ]] || die "no $TRAINCTL_BIN: build first (make build)"
  why="$("$root/hack/cluster/node.sh" check)" || die "the real node cannot start here: $why"
fi

export GOMODCACHE="${TRAINCTL_GOMODCACHE:-$(cache_root)/go/mod}"
src="$(GOFLAGS=-mod=mod go mod download -json "$module@$version" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')" ||
  die "cannot download $module@$version from the module proxy"

# The suite's test binary, once per version; one builder at a time (a second caller waits).
mkdir -p "$dir"
exec 9>"$dir/.e2e-build.lock"
flock 9
if [[ ! -x "$suite" ]]; then
  log "building $module@$version test/e2e/singlecluster (go test -c; niced)"
  t0=$SECONDS
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  cp -r "$src/." "$work/" && chmod -R u+w "$work"
  (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false GOGC=400 \
    GOCACHE="${TRAINCTL_GOCACHE:-$work/.gocache}" nice -n 19 \
    go test -c -mod=readonly -trimpath -gcflags "all=-dwarf=false" -ldflags "-s -w" \
      -o "$suite.tmp" ./test/e2e/singlecluster) || die "building the suite failed"
  mv "$suite.tmp" "$suite"
  rm -rf "$work"
  trap - EXIT
  log "built the suite in $((SECONDS - t0))s: $suite"
fi
exec 9>&-
[[ "$mode" == build ]] && exit 0

kueue_dir="$("$root/hack/kueue/build.sh")"
export KUBECONFIG="$TRAINCTL_CLUSTER_DIR/kubeconfig"
kubectl="$(cluster_bin_dir)/kubectl"
work="$(mktemp -d)"
# Upstream's install with the image built here and without the APIServices; the operator
# under upstream's names; neither controller requests CPU (the node has the machine's 2, all
# of which the JAX spec's workers ask for). What is removed afterwards: both without their CRDs.
manifests() { /usr/bin/python3 "$root/hack/upstream/kueue_e2e_manifests.py" "$@"; }
manifests install --image "registry.k8s.io/kueue/kueue:$version" <"$kueue_dir/install.yaml" |
  manifests no-cpu-requests >"$work/kueue.yaml"
manifests without-crds <"$work/kueue.yaml" >"$work/kueue-rm.yaml"
"$kubectl" kustomize "$root/overlays/kubeflow" | manifests no-cpu-requests >"$work/operator.yaml"
manifests without-crds <"$work/operator.yaml" >"$work/operator-rm.yaml"

cleanup() {
  "$kubectl" delete --ignore-not-found --wait=false -f "$work/operator-rm.yaml" >/dev/null 2>&1 || true
  "$kubectl" delete --ignore-not-found --wait=false -f "$work/kueue-rm.yaml" >/dev/null 2>&1 || true
  # MPIJob's conversion webhook names manifests/' Service again.
  "$kubectl" apply --server-side --force-conflicts -f "$root/manifests/crds/kubeflow.org_mpijobs.yaml" >/dev/null 2>&1 || true
  rm -rf "$work"
}
if [[ "$mode" == all ]]; then
  trap 'cleanup; "$root/hack/cluster/down.sh" --purge >/dev/null 2>&1 || true' EXIT
  "$root/hack/cluster/up.sh"
else
  trap cleanup EXIT
fi

# Kueue as a process (the node-kueue fixture's) and the operator as manifests/ deploys it go
# first: one Kueue and one operator at a time.
"$root/hack/cluster/kueue.sh" down >/dev/null
"$kubectl" delete --ignore-not-found -f "$root/manifests/operator" -f "$root/manifests/rbac" >/dev/null
"$root/hack/cluster/images.sh" kueue-e2e operator
"$root/hack/cluster/node.sh" forget-stale

# answered WHAT JSON: returns once three server-side dry-run creates of JSON in a row are
# admitted (a Deployment's rollout is done before its Service's address leads to it).
answered() {
  local what="$1" json="$2" ok=0 out=""
  for _ in $(seq 90); do
    if out="$(echo "$json" | "$kubectl" create --dry-run=server -f - 2>&1)"; then
      ok=$((ok + 1))
      ((ok >= 3)) && return 0
    else
      ok=0
      sleep 2
    fi
  done
  die "$what did not answer in 180 s: $out"
}

log "installing Kueue $version as upstream's release does (image registry.k8s.io/kueue/kueue:$version, built here)"
"$kubectl" apply --server-side --force-conflicts --field-manager=trainctl-kueue -f "$work/kueue.yaml" >/dev/null
"$kubectl" rollout status -n kueue-system deployment/kueue-controller-manager --timeout=300s
answered "Kueue's webhooks" '{"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{"name":"webhook-probe","namespace":"default"},
  "spec":{"selector":{"matchLabels":{"app":"probe"}},"template":{"metadata":{"labels":{"app":"probe"}},
    "spec":{"containers":[{"name":"probe","image":"registry.k8s.io/pause:3.9"}]}}}}'

log "deploying the operator as kubeflow/training-operator (overlays/kubeflow)"
"$kubectl" apply --server-side --force-conflicts -f "$work/operator.yaml" >/dev/null
"$kubectl" rollout status -n kubeflow deployment/training-operator --timeout=180s
answered "the operator's webhooks" '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob",
  "metadata":{"name":"webhook-probe","namespace":"default"},
  "spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[
    {"name":"pytorch","image":"registry.k8s.io/e2e-test-images/agnhost:2.63.0"}]}}}}}}'

agnhost="registry.k8s.io/e2e-test-images/agnhost:$(cat "$(cache_root)/go/mod/k8s.io/kubernetes@$(k8s_version)/test/images/agnhost/VERSION")"
log "running $module@$version test/e2e/singlecluster (labels: $labels)"
mkdir -p "$work/artifacts"
(cd "$work" && PROJECT_DIR="$src/Makefile" E2E_TEST_AGNHOST_IMAGE="$agnhost" \
  ARTIFACTS="$work/artifacts" "$suite" -ginkgo.no-color -ginkgo.v -ginkgo.timeout=30m \
  -ginkgo.label-filter="$labels")
