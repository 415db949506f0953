# Sourced by bench/operator_scale.sh and bench/operator_latency.sh (not executed): checks the
# binaries, builds the upstream operator when --impl names it, and starts the private benchmark
# cluster both use, ready for either operator. Needs `root` (the repository) and `bin` (the
# benchmark program) set, and the script's arguments passed on:
#
#   source "$root/bench/operator_bench_cluster.sh" "$@"
#
# Sets `upstream` to the flags that pass the upstream binaries on (empty when not asked for):
# --upstream (the Training Operator, --impl upstream) and --mpi-operator (--impl mpi-operator).
# The cluster: state in build/release/bench-cluster, ports 29800+, made afresh each time (what a
# run cut short left there is purged first). Its API server writes an audit log of one
# identity's requests (Metadata level; job status writes and events with their bodies, which
# bench/audit_writes.py reads); manifests/crds are installed; that identity is the
# ServiceAccount trainctl-bench/operator (cluster-admin), with a kubeconfig. When upstream runs,
# also what it needs to start outside a pod: the namespace kubeflow, its webhook certificate
# Secret and a ValidatingWebhookConfiguration for it to fill (rules that match no kubeflow.org
# resource, so neither side pays for admission; the benchmark copies the certificate files to
# disk). With --kind mpijob-v2: mpijobs.kubeflow.org as each side serves it, as JSON files for the
# benchmark to install before each run (TRAINCTL_BENCH_MPI_CRD: manifests/crds', whose
# conversion webhook trainctl serves; TRAINCTL_BENCH_MPI_OPERATOR_CRD: mpi-operator's own), and
# a ValidatingWebhookConfiguration trainctl-bench-validator that matches nothing, for trainctl
# to inject its CA into. Exports TRAINCTL_CLUSTER_DIR, TRAINCTL_PORT_BASE and the TRAINCTL_BENCH_* variables
# bench/operator_harness.h and bench/etcd_maintenance.h read; the cluster is stopped when the script exits.
# shellcheck shell=bash

[[ -x "$bin" ]] || { echo "$(basename "$0"): $bin is not built (make build)" >&2; exit 2; }
[[ -x "$root/build/release/trainctl" ]] ||
  { echo "$(basename "$0"): build/release/trainctl is not built (make build)" >&2; exit 2; }
# The machine and the tree, for the record: a shape's verdict can depend on the CPU kind
# (docs/benchmarks.md, "1 × 2,000 on another 2-core machine").
echo "machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)), \
$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r); \
$(date -u '+%F %T') UTC; tree $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\
$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' with uncommitted changes')"
upstream=()
_bench_training_operator=0 _bench_mpi=0
_bench_args=("$@")
for ((_i = 0; _i < ${#_bench_args[@]}; _i++)); do
  _bench_next="${_bench_args[$((_i + 1))]:-}"
  if [[ "${_bench_args[$_i]}" == --impl && ",$_bench_next," == *,upstream,* ]]; then
    upstream+=(--upstream "$("$root/hack/upstream/build.sh")")
    _bench_training_operator=1
  fi
  if [[ "${_bench_args[$_i]}" == --impl && ",$_bench_next," == *,mpi-operator,* ]]; then
    upstream+=(--mpi-operator "$("$root/hack/upstream/build.sh" --mpi-operator)")
  fi
  [[ "${_bench_args[$_i]}" == --kind && "$_bench_next" == mpijob-v2 ]] && _bench_mpi=1
done

export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
# shellcheck source=../hack/cluster/lib.sh
source "$root/hack/cluster/lib.sh"
# A fresh cluster every time: a run cut short leaves its jobs and pods in etcd, and kwok's nodes
# hold 1,000 pods each (TRAINCTL_KWOK_NODES, default 4).
"$root/hack/cluster/down.sh" --purge >/dev/null 2>&1 || true
mkdir -p "$TRAINCTL_CLUSTER_DIR"
_bench_user=system:serviceaccount:trainctl-bench:operator
_bench_audit_log="$TRAINCTL_CLUSTER_DIR/audit.log"
cat >"$TRAINCTL_CLUSTER_DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  users: ["$_bench_user"]
  verbs: [update, patch]
  resources: [{group: kubeflow.org, resources: ["*/status"]}]
- level: Request
  users: ["$_bench_user"]
  verbs: [create, patch]
  resources: [{group: "", resources: ["events"]}]
- level: Metadata
  users: ["$_bench_user"]
- level: None
EOF
export TRAINCTL_APISERVER_ARGS="${TRAINCTL_APISERVER_ARGS:-} --audit-policy-file=$TRAINCTL_CLUSTER_DIR/audit-policy.yaml --audit-log-path=$_bench_audit_log --audit-log-format=json --audit-log-maxsize=0"
"$root/hack/cluster/up.sh" -q
# On any exit: no operator the benchmark started is left (it may have been killed itself), and
# the cluster stops.
trap 'pkill -f -- "--kubeconfig $TRAINCTL_CLUSTER_DIR/operator.kubeconfig" || true
      "$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
kubectl="$(cluster_bin_dir)/kubectl --kubeconfig $TRAINCTL_CLUSTER_DIR/kubeconfig"
$kubectl apply --server-side -f "$root/manifests/crds" >/dev/null
$kubectl wait --for=condition=Established --timeout=60s crd --all >/dev/null

# The audited identity, and a kubeconfig for it.
$kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: trainctl-bench}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: operator, namespace: trainctl-bench}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: trainctl-bench-operator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: operator, namespace: trainctl-bench}]
EOF
_bench_token="$($kubectl -n trainctl-bench create token operator --duration=12h)"
_bench_kubeconfig="$TRAINCTL_CLUSTER_DIR/operator.kubeconfig"
cp "$TRAINCTL_CLUSTER_DIR/kubeconfig" "$_bench_kubeconfig"
_bench_k="$(cluster_bin_dir)/kubectl --kubeconfig $_bench_kubeconfig"
$_bench_k config set-credentials bench-operator --token="$_bench_token" >/dev/null
$_bench_k config set-context "$($_bench_k config current-context)" --user=bench-operator >/dev/null

if (( _bench_training_operator )); then
  $kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: kubeflow}
---
apiVersion: v1
kind: Secret
metadata: {name: training-operator-webhook-cert, namespace: kubeflow}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validator.training-operator.kubeflow.org}
webhooks:
- name: validator.bench.training-operator.kubeflow.org
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig:
    service: {name: training-operator, namespace: kubeflow, path: /validate-kubeflow-org-v1-pytorchjob}
  rules:
  - {apiGroups: [kubeflow.org], apiVersions: [v1], operations: [CREATE], resources: [bench-matches-nothing]}
EOF
fi
if (( _bench_mpi )); then
  export TRAINCTL_BENCH_MPI_CRD="$TRAINCTL_CLUSTER_DIR/mpijobs-crd.trainctl.json"
  export TRAINCTL_BENCH_MPI_OPERATOR_CRD="$TRAINCTL_CLUSTER_DIR/mpijobs-crd.mpi-operator.json"
  $kubectl create --dry-run=client -o json -f "$root/manifests/crds/kubeflow.org_mpijobs.yaml" \
    >"$TRAINCTL_BENCH_MPI_CRD"
  _bench_mpi_crd="$(dirname "$("$root/hack/upstream/build.sh" --mpi-operator --print-path)")"
  _bench_mpi_crd="$_bench_mpi_crd/../crds/kubeflow.org_mpijobs.yaml"
  if [[ -f "$_bench_mpi_crd" ]]; then
    $kubectl create --dry-run=client -o json -f "$_bench_mpi_crd" >"$TRAINCTL_BENCH_MPI_OPERATOR_CRD"
  fi
  $kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: trainctl-bench-validator}
webhooks:
- name: validator.bench.trainctl.kubeflow.org
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {url: "https://127.0.0.1:1/matches-nothing"}
  rules:
  - {apiGroups: [kubeflow.org], apiVersions: [v1], operations: [CREATE], resources: [bench-matches-nothing]}
EOF
fi
export TRAINCTL_BENCH_OPERATOR_KUBECONFIG="$_bench_kubeconfig"
# etcd's client URL, for compacting and defragmenting it between runs (bench/etcd_maintenance.h).
export TRAINCTL_BENCH_ETCD="http://127.0.0.1:$ETCD_PORT"
export TRAINCTL_BENCH_AUDIT_LOG="$_bench_audit_log" TRAINCTL_BENCH_AUDIT_USER="$_bench_user"
