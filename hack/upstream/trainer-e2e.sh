#!/usr/bin/env bash
# Kubeflow Trainer's own end-to-end suite, unmodified (github.com/kubeflow/trainer/v2@v2.3.0,
# test/e2e, built from the Go module proxy with `go test -c`), against `trainctl operator` on
# the real node, with the JobSet controller.
#
#   trainer-e2e.sh build   the suite's test binary, once per version, into the cache (niced; a
#                          second caller waits for the first through a lock). `make test`'s
#                          background chain runs it.
#   trainer-e2e.sh run     against the node cluster already running (CTest's node and
#                          node-jobset fixtures: `integration.node.trainer_e2e`, label
#                          trainer-v2): installs the Trainer v2 CRDs, deploys the operator from
#                          manifests/ as the node suites do (restarted, so it serves TrainJobs),
#                          applies upstream's own runtimes unchanged from the module
#                          (manifests/base/runtimes, as upstream's e2e set-up does), builds the
#                          stand-ins for the images they name (images.sh trainer-runtimes), runs
#                          the suite, then removes the runtimes and the deployed operator again.
#   trainer-e2e.sh [all]   `make trainer-e2e`: build, then starts the node cluster with the JobSet
#                          controller (the node suites' state folder and ports: not while they
#                          run), runs as above and stops the cluster.
#
# Skipped, and why: Flux (no Flux policy here, and no flux-core packaged for Debian). DeepSpeed runs on the stand-in of
# its runtime image (Open MPI and sshd as mpiuser; DeepSpeed itself is not packaged for Debian,
# and the spec runs the image's default command). Exit status: the suite's. Results: docs/compatibility.md.
#   Environment: TRAINCTL_TRAINER_VERSION (default v2.3.0), TRAINCTL_CACHE,
#   TRAINCTL_TRAINER_E2E_SKIP (a ginkgo skip regex replacing the default).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=../cluster/lib.sh
source "$root/hack/cluster/lib.sh"
# shellcheck source=lib.sh
source "$root/hack/upstream/lib.sh"

version="${TRAINCTL_TRAINER_VERSION:-v2.3.0}"
module="github.com/kubeflow/trainer/v2"
dir="$(cache_root)/upstream/trainer-$version"
suite="$dir/trainer-e2e.test"
skip="${TRAINCTL_TRAINER_E2E_SKIP:-Flux}"
mode="${1:-all}"
node_suite_mode trainer-e2e.sh "$mode"
[[ "$mode" == all ]] && export TRAINCTL_JOBSET=1

src="$(module_dir "$module" "$version")"
# The suite's test binary, once per version.
build_suite "$src" ./test/e2e "$suite"
[[ "$mode" == build ]] && exit 0

export KUBECONFIG="$TRAINCTL_CLUSTER_DIR/kubeconfig"
kubectl="$(cluster_bin_dir)/kubectl"
if [[ "$mode" == all ]]; then
  # Stopped and purged on exit: the operator it deploys and its webhook configurations must
  # not meet the node suites that next start a cluster in the same state folder.
  trap '"$root/hack/cluster/jobset.sh" down >/dev/null 2>&1 || true; "$root/hack/cluster/down.sh" --purge >/dev/null 2>&1 || true' EXIT
  "$root/hack/cluster/up.sh"
else
  # On the fixtures' cluster: upstream's runtimes and the deployed operator go again (its
  # webhooks with it), so nothing it made meets a later suite; the CRDs stay.
  trap '"$kubectl" delete --ignore-not-found --wait=false -k "$src/manifests/base/runtimes" >/dev/null 2>&1 || true
        "$kubectl" delete --ignore-not-found -f "$root/manifests/operator" -f "$root/manifests/rbac" >/dev/null 2>&1 || true' EXIT
fi
"$root/hack/cluster/images.sh" trainer-runtimes
# The Trainer v2 CRDs before the operator starts (it serves TrainJobs when they are there).
"$kubectl" apply --server-side --force-conflicts -f "$root/manifests/crds"
"$kubectl" wait --for=condition=Established --timeout=60s crd --all
(cd "$root/test/integration/node" &&
  "$root/.venv/bin/python3" -c 'import node_harness; node_harness.deploy_operator()')
# An operator deployed by an earlier suite started before these CRDs were there, and serves
# TrainJobs only if they were: started again.
"$kubectl" rollout restart -n trainctl-system deployment/trainctl-operator
"$kubectl" rollout status -n trainctl-system deployment/trainctl-operator --timeout=180s
# Upstream's runtimes, unchanged (its e2e set-up applies them the same way); the webhook that
# checks them is the operator's, so wait until it has its CA.
for _ in $(seq 60); do
  [[ -n "$("$kubectl" get validatingwebhookconfiguration validator.trainctl.kubeflow.org \
    -o jsonpath='{.webhooks[0].clientConfig.caBundle}')" ]] && break
  sleep 2
done
"$kubectl" apply --server-side --force-conflicts -k "$src/manifests/base/runtimes"
# The restarted operator's webhooks answer before the suite starts: the old pod may linger,
# Terminating, behind the Service for a while (a cold CI run's first TrainJob timed out on
# it), so the old pod is gone and three dry-run TrainJobs in a row are answered.
for _ in $(seq 60); do
  pods="$("$kubectl" get pods -n trainctl-system -l app.kubernetes.io/name=trainctl-operator -o name)"
  [[ "$(wc -l <<<"$pods")" == 1 ]] && break
  sleep 1
done
probe='{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
  "metadata":{"name":"webhook-probe","namespace":"default"},
  "spec":{"runtimeRef":{"name":"torch-distributed"}}}'
answered=0
for _ in $(seq 60); do
  if out="$(echo "$probe" | "$kubectl" create --dry-run=server -f - 2>&1)"; then
    answered=$((answered + 1))
    ((answered >= 3)) && break
  else
    answered=0
    sleep 2
  fi
done
((answered >= 3)) || die "the operator's TrainJob webhooks did not answer in 120 s: $out"
log "running $module@$version test/e2e (skipping: $skip)"
"$suite" -ginkgo.no-color -ginkgo.v -ginkgo.timeout=40m -ginkgo.skip="$skip"
