#!/usr/bin/env bash
# Scale benchmark, side by side: starts a private test cluster (own state dir, ports 29800+) with
# an API server audit log for one identity, installs the CRDs, runs operator_scale_bench, stops
# the cluster. Results: docs/benchmarks.md.
#
#   bench/operator_scale.sh [--impl trainctl,upstream,floor] [--jobs 1000] [--replicas 8]
#                           [--qps 20] [--burst 30] [--threads 4] [--run-seconds 30] [--repeat 1]
#
# --impl upstream builds the upstream operator first (hack/upstream/build.sh, cached) and meets
# what it needs to start outside a pod: the namespace kubeflow, its webhook certificate Secret and
# a ValidatingWebhookConfiguration for it to fill (rules that match no kubeflow.org resource, so
# neither side pays for admission), and the certificate files on disk (copied by the benchmark).
# Every operator and the floor run as the ServiceAccount trainctl-bench/operator (cluster-admin),
# whose requests, and only those, the audit log records.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINCTL_BENCH_BIN:-$root/build/release/bench/operator_scale_bench}"
[[ -x "$bin" ]] || { echo "bench/operator_scale.sh: $bin not built (make build)" >&2; exit 2; }
[[ -x "$root/build/release/trainctl" ]] || { echo "bench/operator_scale.sh: build/release/trainctl not built" >&2; exit 2; }

args=("$@")
upstream=()
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[$i]}" == --impl && "${args[$((i + 1))]:-}" == *upstream* ]]; then
    upstream=(--upstream "$("$root/hack/upstream/build.sh")")
  fi
done

export TRAINCTL_CLUSTER_DIR="$root/build/release/bench-cluster" TRAINCTL_PORT_BASE=29800
mkdir -p "$TRAINCTL_CLUSTER_DIR"
user=system:serviceaccount:trainctl-bench:operator
audit_log="$TRAINCTL_CLUSTER_DIR/audit.log"
cat >"$TRAINCTL_CLUSTER_DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["$user"]
- level: None
EOF
rm -f "$audit_log"
export TRAINCTL_APISERVER_ARGS="${TRAINCTL_APISERVER_ARGS:-} --audit-policy-file=$TRAINCTL_CLUSTER_DIR/audit-policy.yaml --audit-log-path=$audit_log --audit-log-format=json --audit-log-maxsize=0"
source "$root/hack/cluster/lib.sh"
"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true  # a cluster left running has other flags
"$root/hack/cluster/up.sh" -q
trap '"$root/hack/cluster/down.sh" >/dev/null 2>&1 || true' EXIT
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
token="$($kubectl -n trainctl-bench create token operator --duration=12h)"
operator_kubeconfig="$TRAINCTL_CLUSTER_DIR/operator.kubeconfig"
cp "$TRAINCTL_CLUSTER_DIR/kubeconfig" "$operator_kubeconfig"
k="$(cluster_bin_dir)/kubectl --kubeconfig $operator_kubeconfig"
$k config set-credentials bench-operator --token="$token" >/dev/null
$k config set-context "$($k config current-context)" --user=bench-operator >/dev/null

if (( ${#upstream[@]} )); then
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

TRAINCTL_BENCH_OPERATOR_KUBECONFIG="$operator_kubeconfig" TRAINCTL_BENCH_AUDIT_LOG="$audit_log" \
TRAINCTL_BENCH_AUDIT_USER="$user" \
  "$bin" --trainctl "$root/build/release/trainctl" "${upstream[@]}" "$@"
