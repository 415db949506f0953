#!/usr/bin/env bash
# Kueue's own end-to-end suite, unmodified (sigs.k8s.io/kueue@v0.17.0, test/e2e/singlecluster,
# built from the Go module proxy with `go test -c`): its PyTorchJob, JAXJob and TrainJob specs,
# against `trainctl operator` on the real node.
#
#   kueue-e2e.sh build   the suite's test binary and agnhost (hack/upstream/agnhost.sh), once
#                        per version, into the cache (niced; a second caller waits for the
#                        first through a lock). `make test`'s background chain runs it.
#   kueue-e2e.sh run     against the node cluster already running (CTest's node fixture:
#                        `integration.node.kueue_e2e`, label kueue). Stops Kueue and JobSet as
#                        processes (the node-kueue and node-jobset fixtures') and the deployed
#                        operator, builds the images (images.sh kueue-e2e: Kueue's and JobSet's
#                        from the binaries hack/{kueue,jobset}/build.sh built, and agnhost from
#                        Kubernetes' own source), installs Kueue as its release does (the
#                        install.yaml hack/kueue/build.sh rendered, unchanged but for the image
#                        and the visibility APIServices, which the test cluster does not
#                        aggregate), then runs two passes and removes what it installed (not the
#                        CRDs):
#                          kubeflow: the operator under Kubeflow's names (overlays/kubeflow: the
#                            suite waits for kubeflow/training-operator); the specs labelled
#                            feature:pytorchjob and feature:jaxjob
#                          trainjob: JobSet installed as its release does, the operator under
#                            Trainer v2's names (overlays/kubeflow-trainer), upstream Trainer's
#                            runtimes; the specs labelled feature:trainjob
#   kueue-e2e.sh [all]   `make kueue-e2e`: build, then starts the node cluster (the node suites'
#                        state folder and ports: not while they run), runs as above and stops it.
#
# No controller requests CPU in these runs: the node has the machine's CPUs (2 here), all of
# which the JAX spec's two workers ask for. Not run: the specs of kinds trainctl does not serve.
# Exit status: 0 when every pass passed. Results: docs/operator.md ("Kueue").
#   Environment: TRAINCTL_KUEUE_VERSION (default v0.17.0), TRAINCTL_TRAINER_VERSION (v2.3.0, its
#   runtimes), TRAINCTL_CACHE, TRAINCTL_KUEUE_E2E_PASSES (default "kubeflow trainjob").
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../cluster/lib.sh
source "$root/hack/cluster/lib.sh"
# shellcheck source=lib.sh
source "$root/hack/upstream/lib.sh"

version="${TRAINCTL_KUEUE_VERSION:-v0.17.0}"
module="sigs.k8s.io/kueue"
dir="$(cache_root)/kueue/$version"
suite="$dir/singlecluster-e2e.test"
passes="${TRAINCTL_KUEUE_E2E_PASSES:-kubeflow trainjob}"
trainer_version="${TRAINCTL_TRAINER_VERSION:-v2.3.0}"
mode="${1:-all}"
node_suite_mode kueue-e2e.sh "$mode"

src="$(module_dir "$module" "$version")"
# The suite's test binary, once per version (225 s on 2 cores, 2026-12-01).
build_suite "$src" ./test/e2e/singlecluster "$suite"
# And agnhost, the program its specs run in their pods (outside images.sh's lock: its image is
# only packed there).
agnhost_bin="$("$root/hack/upstream/agnhost.sh")"
[[ "$mode" == build ]] && exit 0

kueue_dir="$("$root/hack/kueue/build.sh")"
jobset_dir="$("$root/hack/jobset/build.sh")"
trainer_src="$(module_dir github.com/kubeflow/trainer/v2 "$trainer_version")"
export KUBECONFIG="$TRAINCTL_CLUSTER_DIR/kubeconfig"
kubectl="$(cluster_bin_dir)/kubectl"
work="$(mktemp -d)"
# Upstream's installs with the images built here and without Kueue's APIServices; the operator
# under upstream's names; no controller requests CPU (the node has the machine's 2, all of which
# the JAX spec's workers ask for). What is removed afterwards: all of it but the CRDs.
manifests() { /usr/bin/python3 "$root/hack/upstream/kueue_e2e_manifests.py" "$@"; }
manifests install --deployment kueue-system/kueue-controller-manager \
  --image "registry.k8s.io/kueue/kueue:$version" <"$kueue_dir/install.yaml" |
  manifests no-cpu-requests >"$work/kueue.yaml"
manifests install --deployment jobset-system/jobset-controller-manager \
  --image "registry.k8s.io/jobset/jobset:${jobset_dir##*/}" <"$jobset_dir/install.yaml" |
  manifests no-cpu-requests >"$work/jobset.yaml"
"$kubectl" kustomize "$root/overlays/kubeflow" | manifests no-cpu-requests >"$work/kubeflow.yaml"
"$kubectl" kustomize "$root/overlays/kubeflow-trainer" | manifests no-cpu-requests >"$work/kubeflow-trainer.yaml"
for name in kueue jobset kubeflow kubeflow-trainer; do
  manifests without-crds <"$work/$name.yaml" >"$work/$name-rm.yaml"
done

cleanup() {
  "$kubectl" delete --ignore-not-found --wait=false -k "$trainer_src/manifests/base/runtimes" >/dev/null 2>&1 || true
  for name in kubeflow kubeflow-trainer jobset kueue; do
    "$kubectl" delete --ignore-not-found --wait=false -f "$work/$name-rm.yaml" >/dev/null 2>&1 || true
  done
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

# Kueue and JobSet as processes (the node-kueue and node-jobset fixtures') and the operator as
# manifests/ deploys it go first: one of each at a time.
"$root/hack/cluster/kueue.sh" down >/dev/null
"$root/hack/cluster/jobset.sh" down >/dev/null
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
# deploy NAME NAMESPACE/DEPLOYMENT [apply flags]: applies $work/NAME.yaml and waits for the
# rollout.
deploy() {
  local name="$1" deployment="$2"; shift 2
  "$kubectl" apply --server-side --force-conflicts "$@" -f "$work/$name.yaml" >/dev/null
  "$kubectl" rollout status -n "${deployment%/*}" "deployment/${deployment#*/}" --timeout=300s
}
agnhost="registry.k8s.io/e2e-test-images/agnhost:$("$agnhost_bin" --version | awk '{print $NF}')"
mkdir -p "$work/artifacts"
# suite LABELS: the suite's specs with those labels; its exit status.
suite() {
  log "running $module@$version test/e2e/singlecluster (labels: $1)"
  (cd "$work" && PROJECT_DIR="$src/Makefile" E2E_TEST_AGNHOST_IMAGE="$agnhost" \
    ARTIFACTS="$work/artifacts" "$suite" -ginkgo.no-color -ginkgo.v -ginkgo.timeout=20m \
    -ginkgo.label-filter="$1")
}

log "installing Kueue $version as upstream's release does (image registry.k8s.io/kueue/kueue:$version, built here)"
deploy kueue kueue-system/kueue-controller-manager --field-manager=trainctl-kueue
answered "Kueue's webhooks" '{"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{"name":"webhook-probe","namespace":"default"},
  "spec":{"selector":{"matchLabels":{"app":"probe"}},"template":{"metadata":{"labels":{"app":"probe"}},
    "spec":{"containers":[{"name":"probe","image":"registry.k8s.io/pause:3.9"}]}}}}'

status=0
if [[ " $passes " == *" kubeflow "* ]]; then
  log "deploying the operator as kubeflow/training-operator (overlays/kubeflow)"
  deploy kubeflow kubeflow/training-operator
  answered "the operator's webhooks" '{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob",
    "metadata":{"name":"webhook-probe","namespace":"default"},
    "spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[
      {"name":"pytorch","image":"registry.k8s.io/pause:3.9"}]}}}}}}'
  suite 'feature:pytorchjob || feature:jaxjob' || status=1
  # Gone before the next operator starts (its Lease is in its own namespace).
  "$kubectl" delete --ignore-not-found -f "$work/kubeflow-rm.yaml" >/dev/null
fi

if [[ " $passes " == *" trainjob "* ]]; then
  log "installing JobSet ${jobset_dir##*/} as upstream's release does (image built here)"
  deploy jobset jobset-system/jobset-controller-manager --field-manager=trainctl-jobset
  answered "JobSet's webhooks" '{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet",
    "metadata":{"name":"webhook-probe","namespace":"default"},
    "spec":{"replicatedJobs":[{"name":"w","template":{"spec":{"template":{"spec":{
      "restartPolicy":"Never","containers":[{"name":"c","image":"registry.k8s.io/pause:3.9"}]}}}}}]}}'
  # The Trainer v2 CRDs before the operator starts (it serves TrainJobs when they are there).
  "$kubectl" apply --server-side --force-conflicts --field-manager=trainctl-crds -f "$root/manifests/crds" >/dev/null
  "$kubectl" wait --for=condition=Established --timeout=60s crd --all >/dev/null
  log "deploying the operator as kubeflow-system/kubeflow-trainer-controller-manager (overlays/kubeflow-trainer)"
  deploy kubeflow-trainer kubeflow-system/kubeflow-trainer-controller-manager
  # Upstream Trainer's runtimes, unchanged (the TrainJob specs name torch-distributed); the
  # webhook that checks them is the operator's.
  for _ in $(seq 60); do
    [[ -n "$("$kubectl" get validatingwebhookconfiguration validator.trainctl.kubeflow.org \
      -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]] && break
    sleep 2
  done
  "$kubectl" apply --server-side --force-conflicts -k "$trainer_src/manifests/base/runtimes" >/dev/null
  answered "the operator's TrainJob webhooks" '{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
    "metadata":{"name":"webhook-probe","namespace":"default"},
    "spec":{"runtimeRef":{"name":"torch-distributed"}}}'
  suite 'feature:trainjob' || status=1
fi
exit "$status"
