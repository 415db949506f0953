#!/usr/bin/env bash
# End-to-end check of the test control plane (usable from CTest):
#   - up.sh (reuses a running cluster),
#   - the API server answers /readyz and /livez over TLS, verified against the
#     CA in .cluster/kubeconfig and with its client certificate,
#   - kubectl's version equals the server's (and go.mod's k8s.io/kubernetes),
#   - every component listens on 127.0.0.1 only,
#   - kwok nodes are Ready, untainted and their Leases renewed by kwok,
#   - kwok stages: a labelled pod goes Pending -> Running -> Succeeded (exit 0,
#     observed with a watch), another with trainctl.dev/kwok-exit-code ends
#     Failed with that exit code, a run-forever pod stays Running with a pod IP,
#     and deleting it completes; trainctl.dev/kwok-termination-message gives the
#     exact (multi-line, quoted) terminated message, and a pod with
#     trainctl.dev/kwok-waiting-reason stays Pending with that waiting state,
#   - garbage collection: background and foreground cascading deletion,
#   - namespace deletion completes.
# Exits non-zero with a message naming the failed check.  Leaves the cluster running.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

"$here/up.sh" --quiet
STATE="$(state_dir)"
KUBECTL="$(cluster_bin_dir)/kubectl"
export KUBECONFIG="$STATE/kubeconfig"
ns="trainctl-smoke-$(date +%s)-$$"
passed=0
t0=$SECONDS

k() { "$KUBECTL" "$@"; }
kn() { "$KUBECTL" -n "$ns" "$@"; }

diagnostics() {
  echo "---- diagnostics (namespace $ns) ----" >&2
  kn get pods -o wide >&2 2>&1 || true
  kn get configmaps >&2 2>&1 || true
  k get nodes -o wide >&2 2>&1 || true
  local c
  for c in kwok kube-controller-manager kube-scheduler; do
    echo "---- last lines of $STATE/logs/$c.log ----" >&2
    tail -n 15 "$STATE/logs/$c.log" >&2 2>/dev/null || true
  done
}
fail() {
  echo "smoke_test: FAIL: $*" >&2
  diagnostics
  echo "smoke_test: $passed passed, 1 failed"
  exit 1
}
ok() { passed=$(( passed + 1 )); echo "smoke_test: ok   $*"; }
watch_pid=""
stop_watch() { [[ -n "$watch_pid" ]] && kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null || true; watch_pid=""; }
watch_log="$(mktemp)"
cleanup() {
  stop_watch
  rm -f "$watch_log"
  k delete namespace "$ns" --wait=false --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT

# jp KIND/NAME JSONPATH: one field of an object in the test namespace
jp() { kn get "$1" -o "jsonpath=$2" 2>/dev/null; }

# wait_field KIND/NAME JSONPATH EXPECTED TIMEOUT
wait_field() {
  local obj="$1" path="$2" want="$3" deadline=$(( SECONDS + $4 )) got=""
  while (( SECONDS < deadline )); do
    got="$(jp "$obj" "$path" || true)"
    [[ "$got" == "$want" ]] && return 0
    sleep 0.25
  done
  fail "$obj: $path is '${got}', expected '$want' within $4s"
}

# wait_gone KIND/NAME TIMEOUT
wait_gone() {
  local obj="$1" deadline=$(( SECONDS + $2 ))
  while (( SECONDS < deadline )); do
    kn get "$obj" >/dev/null 2>&1 || return 0
    sleep 0.25
  done
  fail "$obj still exists after $2s (deletionTimestamp: '$(jp "$obj" '{.metadata.deletionTimestamp}')', finalizers: '$(jp "$obj" '{.metadata.finalizers}')')"
}

pod() { # name annotations-yaml [ownerReferences-yaml]
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels:
    training.kubeflow.org/job-name: smoke
    training.kubeflow.org/replica-type: worker
  annotations:
$2
${3:-}
spec:
  restartPolicy: ${RESTART_POLICY:-Never}
  containers:
  - name: pytorch
    image: trainctl.dev/fake-trainer:latest
    resources:
      requests: {cpu: 100m, memory: 64Mi}
EOF
}

# 0. the control plane itself
api_url="$(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
[[ "$api_url" == https://127.0.0.1:* ]] || fail "kubeconfig server is '$api_url', expected https://127.0.0.1:<port>"
tls="$(mktemp -d)"
k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$tls/ca.crt"
k config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$tls/client.crt"
k config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$tls/client.key"
for path in /readyz /livez; do
  # --cacert without -k: the serving certificate must verify against the generated CA.
  got="$(curl -fsS --max-time 5 --cacert "$tls/ca.crt" --cert "$tls/client.crt" --key "$tls/client.key" "$api_url$path" 2>&1)" \
    || { rm -rf "$tls"; fail "GET $path over TLS failed: $got"; }
  [[ "$got" == ok ]] || { rm -rf "$tls"; fail "GET $path returned '$got'"; }
done
rm -rf "$tls"
[[ "$(k get --raw /readyz)" == ok ]] || fail "kubectl get --raw /readyz is not ok"
ok "kube-apiserver ready over TLS at $api_url (CA and client certificate from the kubeconfig)"

want_version="$(k8s_version)"
versions="$(k version -o json)" || fail "kubectl version failed"
client_v="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])' <<<"$versions")"
server_v="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' <<<"$versions")"
[[ "$client_v" == "$want_version" && "$server_v" == "$want_version" ]] \
  || fail "kubectl $client_v, server $server_v, expected both $want_version"
ok "kubectl $client_v matches the server $server_v"

if command -v ss >/dev/null; then
  pids=()
  for c in "${COMPONENTS[@]}"; do
    p="$(component_pid "$c")" || fail "$c is not running"
    pids+=("$p")
  done
  listen="$(ss -Hltnp 2>/dev/null | grep -E "pid=($(IFS='|'; echo "${pids[*]}")),")" || true
  [[ -n "$listen" ]] || fail "ss shows no listening socket of the cluster (pids ${pids[*]})"
  bad="$(awk '$4 !~ /^127\.0\.0\.1:/' <<<"$listen")"
  [[ -z "$bad" ]] || fail "components listen beyond loopback: $bad"
  ok "all listening sockets are on 127.0.0.1 (ports $(awk '{sub(/.*:/, "", $4); print $4}' <<<"$listen" | sort -n | paste -sd, -))"
fi

nodes_out="$(k get nodes -l type=kwok -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints}{"\n"}{end}')"
ready_node="$(awk '$2 == "True" && NF == 2 {print $1; exit}' <<<"$nodes_out")"
[[ -n "$ready_node" ]] || fail "no kwok node is Ready and untainted: $nodes_out"
holder="$(k -n kube-node-lease get lease "$ready_node" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" \
  || fail "node $ready_node has no Lease"
[[ -n "$holder" ]] || fail "the Lease of node $ready_node has no holder"
ok "kwok node $ready_node Ready (lease held by kwok $holder); $(grep -c ' True $' <<<"$nodes_out") of $(grep -c . <<<"$nodes_out") kwok nodes Ready"

k create namespace "$ns" >/dev/null || fail "cannot create namespace $ns"
ok "namespace $ns created"

# 1. kwok pod lifecycle.  A watch records every phase the pods go through.
# (kubectl itself in the background, not the kn function: $! must be kubectl's
# pid, or the watch outlives the test and delays the API server's shutdown)
"$KUBECTL" -n "$ns" get pods --watch --output-watch-events \
  -o jsonpath='{.object.metadata.name} {.object.status.phase}{"\n"}' >"$watch_log" 2>&1 &
watch_pid=$!
sleep 0.5
# phases NAME: the pod's phases as the watch saw them, repeats collapsed
phases() { awk -v n="$1" '$1 == n && $2 != prev {printf "%s%s", (prev == "" ? "" : " "), $2; prev = $2}' "$watch_log"; }

pod ok '    trainctl.dev/kwok-start-seconds: "1"
    trainctl.dev/kwok-run-seconds: "2"' | kn create -f - >/dev/null || fail "cannot create pod ok"
pod crash '    trainctl.dev/kwok-run-seconds: "1"
    trainctl.dev/kwok-exit-code: "137"' | kn create -f - >/dev/null || fail "cannot create pod crash"
pod forever '    trainctl.dev/kwok-run-forever: "true"' | kn create -f - >/dev/null || fail "cannot create pod forever"
RESTART_POLICY=OnFailure pod restarts '    trainctl.dev/kwok-run-seconds: "1"
    trainctl.dev/kwok-exit-code: "3"
    trainctl.dev/kwok-termination-message: "restarted"' | kn create -f - >/dev/null || fail "cannot create pod restarts"
# the annotation values are YAML double-quoted strings: a newline and quotes
pod message '    trainctl.dev/kwok-run-seconds: "1"
    trainctl.dev/kwok-exit-code: "3"
    trainctl.dev/kwok-termination-message: "line one\nboom \"quoted\""' | kn create -f - >/dev/null || fail "cannot create pod message"
pod pullbackoff '    trainctl.dev/kwok-waiting-reason: ImagePullBackOff
    trainctl.dev/kwok-waiting-message: "Back-off pulling image \"nope:1\""' | kn create -f - >/dev/null || fail "cannot create pod pullbackoff"

wait_field pod/forever '{.status.phase}' Running 60
[[ -n "$(jp pod/forever '{.status.podIP}')" ]] || fail "pod/forever is Running without a podIP"
[[ -n "$(jp pod/forever '{.status.containerStatuses[0].state.running.startedAt}')" ]] \
  || fail "pod/forever has no running container status"
[[ -n "$(jp pod/forever '{.spec.nodeName}')" ]] || fail "pod/forever has no node"
ok "pod/forever scheduled to $(jp pod/forever '{.spec.nodeName}') and Running with podIP $(jp pod/forever '{.status.podIP}')"

wait_field pod/ok '{.status.phase}' Succeeded 60
code="$(jp pod/ok '{.status.containerStatuses[0].state.terminated.exitCode}')"
[[ "$code" == 0 ]] || fail "pod/ok: exit code '$code', expected 0"

wait_field pod/crash '{.status.phase}' Failed 60
code="$(jp pod/crash '{.status.containerStatuses[0].state.terminated.exitCode}')"
[[ "$code" == 137 ]] || fail "pod/crash: exit code '$code', expected 137"
reason="$(jp pod/crash '{.status.containerStatuses[0].state.terminated.reason}')"
[[ "$reason" == Error ]] || fail "pod/crash: termination reason '$reason', expected Error"

wait_field pod/message '{.status.phase}' Failed 60

sleep 0.5
stop_watch
[[ "$(phases ok)" == "Pending Running Succeeded" ]] || fail "pod/ok went through '$(phases ok)', expected 'Pending Running Succeeded'"
ok "pod/ok went Pending -> Running -> Succeeded with exit code 0"
[[ "$(phases crash)" == "Pending Running Failed" ]] || fail "pod/crash went through '$(phases crash)', expected 'Pending Running Failed'"
ok "pod/crash went Pending -> Running -> Failed with exit code 137 (reason Error)"

# trainctl.dev/kwok-termination-message, verbatim
[[ "$(phases message)" == "Pending Running Failed" ]] || fail "pod/message went through '$(phases message)', expected 'Pending Running Failed'"
code="$(jp pod/message '{.status.containerStatuses[0].state.terminated.exitCode}')"
[[ "$code" == 3 ]] || fail "pod/message: exit code '$code', expected 3"
want=$'line one\nboom "quoted"'
got="$(jp pod/message '{.status.containerStatuses[0].state.terminated.message}')"
[[ "$got" == "$want" ]] || fail "pod/message: termination message $(printf %q "$got"), expected $(printf %q "$want")"
kn delete pod message --wait=false >/dev/null || fail "cannot delete pod/message"
wait_gone pod/message 30
ok "pod/message ended Failed with exit code 3 and the annotation's two-line termination message"

# trainctl.dev/kwok-waiting-reason: bound, never Running, the waiting state as asked
[[ "$(phases pullbackoff)" == Pending ]] || fail "pod/pullbackoff went through '$(phases pullbackoff)', expected 'Pending' only"
wait_field pod/pullbackoff '{.status.containerStatuses[0].state.waiting.reason}' ImagePullBackOff 30
# An unrelated change makes kwok look at the pod again: the waiting stage must
# not apply again (that would renew the timestamps in the status).
pullbackoff_status="$(jp pod/pullbackoff '{.status}')"
kn annotate pod pullbackoff trainctl.dev/smoke-poke=1 >/dev/null || fail "cannot annotate pod/pullbackoff"

# restartPolicy OnFailure + non-zero exit: restarted in place, never Failed
deadline=$(( SECONDS + 30 ))
until [[ "$(jp pod/restarts '{.status.containerStatuses[0].restartCount}')" -ge 2 ]]; do
  (( SECONDS < deadline )) || fail "pod/restarts: restartCount '$(jp pod/restarts '{.status.containerStatuses[0].restartCount}')' after 30s, expected >= 2"
  sleep 0.25
done
[[ "$(jp pod/restarts '{.status.phase}')" == Running ]] || fail "pod/restarts is $(jp pod/restarts '{.status.phase}'), expected Running"
code="$(jp pod/restarts '{.status.containerStatuses[0].lastState.terminated.exitCode}')"
[[ "$code" == 3 ]] || fail "pod/restarts: lastState exit code '$code', expected 3"
got="$(jp pod/restarts '{.status.containerStatuses[0].lastState.terminated.message}')"
[[ "$got" == restarted ]] || fail "pod/restarts: lastState message '$got', expected 'restarted'"
ok "pod/restarts (restartPolicy OnFailure, exit code 3) restarted in place: Running, restartCount $(jp pod/restarts '{.status.containerStatuses[0].restartCount}')"

sleep 1 # well past the default run time of 1s
[[ "$(jp pod/forever '{.status.phase}')" == Running ]] || fail "pod/forever left Running: $(jp pod/forever '{.status.phase}')"
ok "pod/forever still Running"

# pod/pullbackoff, seconds after its creation and the poke above
[[ -n "$(jp pod/pullbackoff '{.spec.nodeName}')" ]] || fail "pod/pullbackoff is not bound to a node"
got="$(jp pod/pullbackoff '{.status.phase}|{.status.containerStatuses[0].state.waiting.reason}|{.status.containerStatuses[0].state.waiting.message}|{.status.containerStatuses[0].ready}|{.status.conditions[?(@.type=="Ready")].reason}')"
want='Pending|ImagePullBackOff|Back-off pulling image "nope:1"|false|ContainersNotReady'
[[ "$got" == "$want" ]] || fail "pod/pullbackoff: phase|waiting reason|message|ready|Ready reason is '$got', expected '$want'"
[[ "$(jp pod/pullbackoff '{.status}')" == "$pullbackoff_status" ]] \
  || fail "pod/pullbackoff: the waiting stage applied again after an unrelated change: status was $pullbackoff_status, is $(jp pod/pullbackoff '{.status}')"
kn delete pod pullbackoff --wait=false >/dev/null || fail "cannot delete pod/pullbackoff"
wait_gone pod/pullbackoff 30
ok "pod/pullbackoff stayed Pending with waiting reason ImagePullBackOff and its message, then was deleted"

kn delete pod forever --wait=false >/dev/null || fail "cannot delete pod/forever"
wait_gone pod/forever 30
ok "graceful deletion of a Running pod completed"

# 2. garbage collection (kube-controller-manager)
kn create configmap owner-bg >/dev/null || fail "cannot create configmap owner-bg"
uid="$(jp configmap/owner-bg '{.metadata.uid}')"
owner_ref="  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner-bg, uid: $uid}"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child-bg\n%s\n' "$owner_ref" | kn create -f - >/dev/null \
  || fail "cannot create configmap child-bg"
kn delete configmap owner-bg --cascade=background >/dev/null || fail "cannot delete configmap owner-bg"
wait_gone configmap/child-bg 60
ok "background cascading deletion removed the dependent ConfigMap"

kn create configmap owner-fg >/dev/null || fail "cannot create configmap owner-fg"
uid="$(jp configmap/owner-fg '{.metadata.uid}')"
pod child-pod '    trainctl.dev/kwok-run-forever: "true"' "  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner-fg, uid: $uid, blockOwnerDeletion: true}" |
  kn create -f - >/dev/null || fail "cannot create pod child-pod"
wait_field pod/child-pod '{.status.phase}' Running 60
kn delete configmap owner-fg --cascade=foreground --wait=false >/dev/null || fail "cannot delete configmap owner-fg"
wait_gone configmap/owner-fg 60
kn get pod child-pod >/dev/null 2>&1 && fail "foreground deletion finished but pod/child-pod still exists"
ok "foreground cascading deletion removed the dependent Running pod, then the owner"

# 3. namespace deletion (namespace controller + kwok deleting the pods)
k delete namespace "$ns" --wait=false >/dev/null || fail "cannot delete namespace $ns"
deadline=$(( SECONDS + 90 ))
while k get namespace "$ns" >/dev/null 2>&1; do
  (( SECONDS < deadline )) || fail "namespace $ns still exists after 90s"
  sleep 0.5
done
ok "namespace deleted"
trap - EXIT

echo "smoke_test: all checks passed in $(( SECONDS - t0 ))s"
echo "smoke_test: $passed passed, 0 failed"
