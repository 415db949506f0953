#!/usr/bin/env bash
# Starts the trainctl test control plane (idempotent):
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with
#   fake nodes, all on 127.0.0.1, TLS with a generated CA.
# Components already running are left alone; missing ones are (re)started, so
# after killing one (e.g. the API server in a test) running up.sh again brings
# it back with the same data.
#
# State: ${TRAINCTL_CLUSTER_DIR:-<repo>/.cluster}: kubeconfig, env, pki/, logs/, run/,
#   etcd/, config/ (git-ignored).  -q/--quiet: print only errors and build progress.
#
# Environment:
#   TRAINCTL_CLUSTER_DIR   state directory (default <repo>/.cluster)
#   TRAINCTL_PORT_BASE     port base (default 29400: API 29443, etcd 29479/29480,
#                          controller-manager 29457, scheduler 29459)
#   TRAINCTL_KWOK_NODES    number of fake nodes (default 4; may be 0 with a real node)
#   TRAINCTL_REAL_NODE     1 = also start a real node (node.sh: kubelet, containerd, CNI,
#                          CoreDNS, kube-proxy, a loopback registry); the API server then
#                          authorizes nodes and mounts service-account tokens
#   TRAINCTL_JOBSET        1 = also start the real JobSet controller (jobset.sh; sigs.k8s.io/jobset
#                          built from the Go module proxy, webhooks on 127.0.0.1, base+90..92)
#   TRAINCTL_KUEUE         1 = also start Kueue (kueue.sh; sigs.k8s.io/kueue built from the Go
#                          module proxy, its integrations for trainctl's kinds, base+66..68)
#   TRAINCTL_ETCD_ARGS, TRAINCTL_APISERVER_ARGS, TRAINCTL_KCM_ARGS,
#   TRAINCTL_SCHEDULER_ARGS, TRAINCTL_KWOK_ARGS
#                          extra flags appended to that component (whitespace-separated)
#   TRAINCTL_UP_TIMEOUT    seconds to wait for each readiness step (default 120)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

quiet=0
for arg in "$@"; do
  case "$arg" in
    -q|--quiet) quiet=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) die "up.sh: unknown argument $arg" ;;
  esac
done

t_start=$SECONDS
STATE="$(state_dir)"
# One up.sh/down.sh at a time per state directory (test processes may call
# up.sh concurrently).  The daemons are started with fd 8 closed, so the lock
# is released when this script exits.
exec 8>"$STATE/.lock"
if ! flock -n 8; then
  log "another up.sh/down.sh is running for $STATE; waiting for it"
  flock 8
fi
timeout_s="${TRAINCTL_UP_TIMEOUT:-120}"
nodes="${TRAINCTL_KWOK_NODES:-4}"
if real_node; then
  [[ "$nodes" =~ ^[0-9]+$ ]] || die "TRAINCTL_KWOK_NODES must be a number"
  problem="$("$here/node.sh" check)" || die "the real node cannot start: $problem"
else
  [[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 1 ]] || die "TRAINCTL_KWOK_NODES must be a positive integer"
fi

for tool in openssl curl base64 setsid flock; do
  command -v "$tool" >/dev/null || die "$tool not found in PATH"
done

BIN="$("$here/build.sh" control-plane)"
KUBECTL="$BIN/kubectl"
mkdir -p "$STATE"/{pki,logs,run,etcd,config}
chmod 700 "$STATE/pki" "$STATE/etcd"
PKI="$STATE/pki"
API_URL="https://127.0.0.1:$APISERVER_PORT"

# --------------------------------------------------------------------------
# PKI: a CA, a serving cert for the API server, client certs per component,
# and the service-account signing key.  Reused while valid for another day.
cert_valid() { [[ -s "$1.crt" && -s "$1.key" ]] && openssl x509 -noout -checkend 86400 -in "$1.crt" >/dev/null 2>&1; }

new_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; chmod 600 "$1"; }

# sign NAME SUBJECT EXTENSIONS...
sign() {
  local name="$1" subj="$2"; shift 2
  local ext="$PKI/$name.ext"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "$@" >"$ext"
  new_key "$PKI/$name.key"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -sha256 -extfile "$ext" \
    -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

client_cert() { # name CN O
  sign "$1" "/O=$3/CN=$2" "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth"
}

ensure_pki() {
  local regen=0
  if ! cert_valid "$PKI/ca"; then
    log "generating CA and certificates in $PKI"
    new_key "$PKI/ca.key"
    openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=trainctl-test-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
      -out "$PKI/ca.crt" 2>/dev/null
    regen=1
  fi
  if (( regen )) || ! cert_valid "$PKI/apiserver"; then
    sign apiserver "/CN=kube-apiserver" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  fi
  # Components authenticate with client certificates.  The admin user and the
  # fake-kubelet controller are in system:masters; the controller manager and
  # scheduler use their well-known names and are in system:masters as well, so
  # no service-account credentials are needed.
  (( regen )) || cert_valid "$PKI/admin" || regen=1
  if (( regen )) || ! cert_valid "$PKI/admin"; then client_cert admin trainctl-admin system:masters; fi
  if (( regen )) || ! cert_valid "$PKI/kube-controller-manager"; then
    client_cert kube-controller-manager system:kube-controller-manager system:masters; fi
  if (( regen )) || ! cert_valid "$PKI/kube-scheduler"; then
    client_cert kube-scheduler system:kube-scheduler system:masters; fi
  if (( regen )) || ! cert_valid "$PKI/kwok"; then client_cert kwok kwok-controller system:masters; fi
  if (( regen )) || ! cert_valid "$PKI/kwok-serving"; then
    sign kwok-serving "/CN=kwok-node" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost"
  fi
  if (( regen )) || ! cert_valid "$PKI/apiserver-kubelet-client"; then
    client_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters; fi
  if [[ ! -s "$PKI/sa.key" || ! -s "$PKI/sa.pub" ]]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
    chmod 600 "$PKI/sa.key"
    openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
}

# write_kubeconfig FILE USER-CERT-NAME: self-contained (certs embedded as data)
write_kubeconfig() {
  local file="$1" name="$2" tmp
  tmp="$(mktemp "$file.XXXXXX")"
  cat >"$tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainctl
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 <"$PKI/$name.crt")
    client-key-data: $(base64 -w0 <"$PKI/$name.key")
contexts:
- name: trainctl
  context:
    cluster: trainctl
    user: $name
    namespace: default
current-context: trainctl
EOF
  chmod 600 "$tmp"
  mv -f "$tmp" "$file"
}

# --------------------------------------------------------------------------
# Processes
start_component() { # name args...
  local name="$1"; shift
  local pid
  if pid="$(component_pid "$name")"; then
    return 0
  fi
  local logf="$STATE/logs/$name.log"
  printf '==== %s starting %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" >>"$logf"
  # setsid: the cluster outlives the shell (and its Ctrl-C) that started it.
  # The wrapper writes its own pid, then execs the program under that pid.
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$(pid_file "$name")" "$BIN/$name" "$@" \
    >>"$logf" 2>&1 </dev/null 8>&- &
  local i
  for (( i = 0; i < 50; i++ )); do
    component_pid "$name" >/dev/null && break
    sleep 0.1
  done
  pid="$(component_pid "$name")" || { tail -n 20 "$logf" >&2; die "$name did not start (log: $logf)"; }
  STARTED+=("$name")
  (( quiet )) || log "started $name (pid $pid, log: ${logf#"$PWD"/})"
}

check_port() { # name port
  if ! component_pid "$1" >/dev/null && port_in_use "$2"; then
    die "port $2 (for $1) is already in use by another program; set TRAINCTL_PORT_BASE to move the cluster's ports"
  fi
}

api_get() { curl -fsS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API_URL$1" 2>/dev/null; }
api_ready() { [[ "$(api_get /readyz)" == ok ]]; }
etcd_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; }
component_healthy() { [[ "$(curl -fsSk --max-time 2 "https://127.0.0.1:$1/healthz" 2>/dev/null)" == ok ]]; }

# extra_args VAR: splits a user-provided flag list
extra_args() { local v="${!1:-}"; [[ -n "$v" ]] && printf '%s\n' $v; true; }

# write_kwok_logs: what `kubectl logs` shows for every fake container.  The API server
# reaches kwok's kubelet-like server on 127.0.0.1:$KWOK_PORT (each node's ExternalIP and
# kubelet port), which serves this CRI-format file.
write_kwok_logs() {
  local now
  now="$(date -u +%Y-%m-%dT%H:%M:%S.000000000Z)"
  printf '%s stdout F %s\n' \
    "$now" "kwok fake container: started" \
    "$now" "kwok fake container: this log is served by the kwok node through the API server" \
    >"$STATE/config/container.log"
  cat >"$STATE/config/container-logs.yaml" <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: trainctl-fake-container-log
spec:
  logs:
  - logsFile: $STATE/config/container.log
    follow: false
EOF
}

# launch NAME: starts one component with its flags (if not already running).
launch() {
  local extra=()
  case "$1" in
    etcd)
      mapfile -t extra < <(extra_args TRAINCTL_ETCD_ARGS)
      start_component etcd \
        --name=trainctl --data-dir="$STATE/etcd" \
        --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster="trainctl=http://127.0.0.1:$ETCD_PEER_PORT" \
        --unsafe-no-fsync=true --quota-backend-bytes=8589934592 --log-level=warn \
        "${extra[@]}" ;;
    kube-apiserver)
      mapfile -t extra < <(extra_args TRAINCTL_APISERVER_ARGS)
      # With kwok nodes only, pods need no service-account token and the `kubernetes` Service
      # no endpoint.  A real node runs pods that call the API (the operator): they get tokens,
      # the kubelet is authorized as a node, and the Service points at node.sh's relay on the
      # bridge (the API server itself stays on loopback).
      local mode=()
      if real_node; then
        mode=(--advertise-address="$NODE_IP" --authorization-mode=Node,RBAC
          --enable-admission-plugins=NodeRestriction --endpoint-reconciler-type=lease
          --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt"
          --kubelet-client-key="$PKI/apiserver-kubelet-client.key")
      else
        mode=(--advertise-address=127.0.0.1 --authorization-mode=RBAC
          --disable-admission-plugins=ServiceAccount --endpoint-reconciler-type=none)
      fi
      start_component kube-apiserver \
        --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
        --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
        --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
        --client-ca-file="$PKI/ca.crt" \
        "${mode[@]}" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
        --service-cluster-ip-range=10.0.0.0/24 \
        --allow-privileged=true \
        --kubelet-preferred-address-types=ExternalIP,InternalIP,Hostname \
        --kubelet-certificate-authority="$PKI/ca.crt" \
        "${extra[@]}" ;;
    kube-controller-manager)
      # No --authentication/authorization-kubeconfig: the secure port serves
      # only /healthz here, and delegated authn would need a front-proxy CA.
      mapfile -t extra < <(extra_args TRAINCTL_KCM_ARGS)
      start_component kube-controller-manager \
        --kubeconfig="$STATE/config/kube-controller-manager.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
        --leader-elect=false \
        --controllers='*' \
        --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
        --service-cluster-ip-range=10.0.0.0/24 \
        "${extra[@]}" ;;
    kube-scheduler)
      printf '%s\n' \
        "apiVersion: kubescheduler.config.k8s.io/v1" \
        "kind: KubeSchedulerConfiguration" \
        "clientConnection:" \
        "  kubeconfig: $STATE/config/kube-scheduler.kubeconfig" \
        "leaderElection:" \
        "  leaderElect: false" >"$STATE/config/kube-scheduler.yaml"
      mapfile -t extra < <(extra_args TRAINCTL_SCHEDULER_ARGS)
      start_component kube-scheduler \
        --config="$STATE/config/kube-scheduler.yaml" \
        --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
        "${extra[@]}" ;;
    kwok)
      component_pid kwok >/dev/null && return 0
      cp -f "$here/kwok/node-stages.yaml" "$here/kwok/pod-stages.yaml" "$STATE/config/"
      write_kwok_logs
      # kwok only manages nodes whose Lease it holds, and every kwok process has
      # a new random holder identity: a restarted kwok would sit idle until the
      # old leases expire (40 s).  No other holder exists, so drop them.
      local leases=()
      mapfile -t leases < <("$KUBECTL" --kubeconfig="$STATE/kubeconfig" get nodes -l type=kwok \
        -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null || true)
      if (( ${#leases[@]} )); then
        "$KUBECTL" --kubeconfig="$STATE/kubeconfig" -n kube-node-lease delete lease --ignore-not-found \
          "${leases[@]}" >/dev/null || log "warning: could not delete stale node leases"
      fi
      mapfile -t extra < <(extra_args TRAINCTL_KWOK_ARGS)
      start_component kwok \
        --kubeconfig="$STATE/config/kwok.kubeconfig" \
        --config="$STATE/config/node-stages.yaml" --config="$STATE/config/pod-stages.yaml" \
        --config="$STATE/config/container-logs.yaml" \
        --server-address="127.0.0.1:$KWOK_PORT" --node-port="$KWOK_PORT" \
        --tls-cert-file="$PKI/kwok-serving.crt" --tls-private-key-file="$PKI/kwok-serving.key" \
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --cidr=10.244.0.0/16 --node-ip=10.255.255.254 \
        --node-lease-duration-seconds=40 \
        "${extra[@]}" ;;
    *) die "unknown component $1" ;;
  esac
}

# wait_for NAME DESCRIPTION COMMAND...: polls until COMMAND succeeds.  If the
# component's process goes away meanwhile (e.g. it was still shutting down
# after a SIGTERM when up.sh looked), it is started once more; a second exit
# is an error.
declare -A RELAUNCHED=()
wait_for() {
  local name="$1" what="$2"; shift 2
  local deadline=$(( SECONDS + timeout_s ))
  until "$@" >/dev/null 2>&1; do
    if [[ "$name" != - ]] && ! component_pid "$name" >/dev/null; then
      if [[ -z "${RELAUNCHED[$name]:-}" ]]; then
        RELAUNCHED[$name]=1
        log "$name is not running; starting it again"
        launch "$name"
        continue
      fi
      tail -n 30 "$STATE/logs/$name.log" >&2
      die "$name exited while waiting for $what (log: $STATE/logs/$name.log)"
    fi
    (( SECONDS < deadline )) || die "timed out after ${timeout_s}s waiting for $what (logs: $STATE/logs/)"
    sleep 0.2
  done
}

# --------------------------------------------------------------------------
STARTED=()

# Fast path: everything already up.
all_running=1
for c in "${COMPONENTS[@]}"; do
  [[ "$c" == kwok ]] && (( nodes == 0 )) && continue
  component_pid "$c" >/dev/null || all_running=0
done
if (( all_running )) && [[ -s "$STATE/kubeconfig" ]] && api_ready; then
  (( quiet )) || log "cluster already running ($STATE)"
else
  check_port etcd "$ETCD_PORT"
  check_port etcd "$ETCD_PEER_PORT"
  check_port kube-apiserver "$APISERVER_PORT"
  check_port kube-controller-manager "$KCM_PORT"
  check_port kube-scheduler "$SCHEDULER_PORT"
  check_port kwok "$KWOK_PORT"

  ensure_pki
  write_kubeconfig "$STATE/kubeconfig" admin
  for c in kube-controller-manager kube-scheduler kwok; do
    write_kubeconfig "$STATE/config/$c.kubeconfig" "$c"
  done

  launch etcd
  wait_for etcd "etcd health" etcd_ready
  launch kube-apiserver
  wait_for kube-apiserver "kube-apiserver /readyz" api_ready
  launch kube-controller-manager
  launch kube-scheduler
  (( nodes > 0 )) && launch kwok
  wait_for kube-controller-manager "kube-controller-manager /healthz" component_healthy "$KCM_PORT"
  wait_for kube-scheduler "kube-scheduler /healthz" component_healthy "$SCHEDULER_PORT"
fi

# Fake nodes (idempotent).  A node created with a status keeps it; kwok's
# trainctl-node-ready stage then marks it Ready and keeps it alive via Leases.
node_yaml() {
  local i
  for (( i = 0; i < nodes; i++ )); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
status:
  addresses:
  - {type: InternalIP, address: 10.255.0.$(( i + 1 ))}
  - {type: ExternalIP, address: 127.0.0.1}
  - {type: Hostname, address: kwok-node-$i}
  capacity: {cpu: "64", memory: 512Gi, ephemeral-storage: 1Ti, pods: "1000", nvidia.com/gpu: "8"}
  allocatable: {cpu: "64", memory: 512Gi, ephemeral-storage: 1Ti, pods: "1000", nvidia.com/gpu: "8"}
EOF
  done
}
existing="$("$KUBECTL" --kubeconfig="$STATE/kubeconfig" get nodes -l type=kwok -o name 2>/dev/null | wc -l)"
if (( nodes > 0 && existing < nodes )); then
  node_yaml | "$KUBECTL" --kubeconfig="$STATE/kubeconfig" apply -f - >/dev/null \
    || die "could not create the kwok nodes"
fi

nodes_ready() {
  local out name t ts now fresh=0
  out="$("$KUBECTL" --kubeconfig="$STATE/kubeconfig" get nodes -l type=kwok -o \
    jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{" "}{.spec.taints}{"\n"}{end}')" || return 1
  # Ready, and no node.kubernetes.io/not-ready taint left (the scheduler would skip the node).
  [[ "$(grep -c ' True $' <<<"$out")" -ge "$nodes" ]] || return 1
  # A Ready condition may be stale (kept in etcd from an earlier run); a node
  # Lease renewed within the lease duration shows that this kwok manages it
  # (stale leases were deleted before kwok started).
  out="$("$KUBECTL" --kubeconfig="$STATE/kubeconfig" -n kube-node-lease get leases -o \
    jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.renewTime}{"\n"}{end}')" || return 1
  now="$(date +%s)"
  while read -r name t; do
    [[ "$name" == kwok-node-* && -n "$t" ]] || continue
    ts="$(date -d "$t" +%s 2>/dev/null)" || continue
    (( now - ts <= 40 )) && fresh=$(( fresh + 1 ))
  done <<<"$out"
  (( fresh >= nodes ))
}
(( nodes == 0 )) || wait_for kwok "$nodes kwok nodes Ready and untainted" nodes_ready

if real_node; then
  "$here/node.sh" up
fi
if [[ "${TRAINCTL_JOBSET:-0}" == 1 ]]; then
  "$here/jobset.sh" up
fi
if [[ "${TRAINCTL_KUEUE:-0}" == 1 ]]; then
  "$here/kueue.sh" up
fi

cat >"$STATE/env" <<EOF
# Source this file to use the trainctl test cluster.
export KUBECONFIG='$STATE/kubeconfig'
export PATH='$BIN':"\$PATH"
export TRAINCTL_CLUSTER_DIR='$STATE'
export TRAINCTL_KUBECTL='$KUBECTL'
export TRAINCTL_APISERVER_URL='$API_URL'
export TRAINCTL_ETCD_URL='http://127.0.0.1:$ETCD_PORT'
EOF

if (( quiet )); then exit 0; fi
if (( ${#STARTED[@]} )); then
  log "cluster up in $(( SECONDS - t_start ))s (started: ${STARTED[*]})"
fi
cat >&2 <<EOF

Kubernetes $(k8s_version) test cluster on $API_URL with $nodes kwok nodes (state: $STATE)
  export KUBECONFIG=$STATE/kubeconfig
  kubectl: $KUBECTL        (or: source $STATE/env)
  logs: $STATE/logs/   stop: hack/cluster/down.sh [--purge]
EOF
