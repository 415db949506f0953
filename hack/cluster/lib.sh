# Shared helpers for hack/cluster/*.sh (sourced, not executed).
# shellcheck shell=bash

# kwok is built with its own go.mod (`go install sigs.k8s.io/kwok/cmd/kwok@...`):
# its dependency set (otel, grpc, ...) is newer than Kubernetes' pins, so it
# does not share the wrapper module.
KWOK_VERSION="${TRAINCTL_KWOK_VERSION:-v0.8.0}"

_cluster_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

repo_root() { (cd "$_cluster_lib_dir/../.." && pwd); }
cache_root() { echo "${TRAINCTL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainctl}"; }

# The Kubernetes and etcd versions are whatever the committed wrapper go.mod
# requires (in a require block or a one-line `require mod vX`; replace lines
# have "=>" as their second field and are skipped).
gomod_version() { # module
  awk -v mod="$1" '$1 == "require" { $1 = ""; $0 = $0 }
    $1 == mod && $2 ~ /^v[0-9]+\.[0-9]+\.[0-9]+/ { print $2; exit }' "$_cluster_lib_dir/go.mod"
}
k8s_version() { gomod_version k8s.io/kubernetes; }
etcd_version() { gomod_version go.etcd.io/etcd/server/v3; }
# Fails (instead of printing .../k8s//bin) when go.mod names no version.
cluster_bin_dir() {
  local v; v="$(k8s_version)"
  [[ -n "$v" ]] || die "cannot read the k8s.io/kubernetes version from $_cluster_lib_dir/go.mod"
  echo "$(cache_root)/k8s/$v/bin"
}

state_dir() {
  local d="${TRAINCTL_CLUSTER_DIR:-$(repo_root)/.cluster}"
  mkdir -p "$d"
  (cd "$d" && pwd)
}

# Ports: loopback only, below the Linux ephemeral range (32768+) so an outgoing
# connection can never be holding one.  Override the base to run a second
# cluster (with another TRAINCTL_CLUSTER_DIR) side by side.
port_base() { echo "${TRAINCTL_PORT_BASE:-29400}"; }
ETCD_PORT=$(( $(port_base) + 79 ))
ETCD_PEER_PORT=$(( $(port_base) + 80 ))
APISERVER_PORT=$(( $(port_base) + 43 ))
KCM_PORT=$(( $(port_base) + 57 ))
SCHEDULER_PORT=$(( $(port_base) + 59 ))
# kwok's kubelet-like server: the API server reads pod logs from it (all fake nodes).
KWOK_PORT=$(( $(port_base) + 50 ))
# The JobSet controller (jobset.sh, TRAINCTL_JOBSET=1): its webhooks, metrics and health probes.
JOBSET_WEBHOOK_PORT=$(( $(port_base) + 90 ))
JOBSET_METRICS_PORT=$(( $(port_base) + 91 ))
JOBSET_HEALTH_PORT=$(( $(port_base) + 92 ))
# Kueue (kueue.sh, TRAINCTL_KUEUE=1): the same three.
KUEUE_WEBHOOK_PORT=$(( $(port_base) + 66 ))
KUEUE_METRICS_PORT=$(( $(port_base) + 67 ))
KUEUE_HEALTH_PORT=$(( $(port_base) + 68 ))

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

# The real node (node.sh, TRAINCTL_REAL_NODE=1).  Its ports follow the port base; its pods get
# addresses on a bridge named after the port base, in a /24 of 10.89.0.0/16 derived from it,
# so clusters with different bases never share a bridge or a subnet.
real_node() { [[ "${TRAINCTL_REAL_NODE:-0}" == 1 ]]; }
node_port() { # name
  local offset
  case "$1" in
    registry) offset=81 ;; coredns-health) offset=82 ;; coredns-ready) offset=83 ;;
    kubelet) offset=84 ;; kubelet-healthz) offset=85 ;; kube-proxy-healthz) offset=86 ;;
    kube-proxy-metrics) offset=87 ;; containerd-stream) offset=88 ;;
    *) die "no port for $1" ;;
  esac
  echo $(( $(port_base) + offset ))
}
NODE_NAME="trainctl-node"
NODE_BRIDGE="tc$(port_base)"
NODE_NET="10.89.$(( $(port_base) / 100 % 256 ))"
NODE_CIDR="$NODE_NET.0/24"
NODE_IP="$NODE_NET.1"
NODE_RANGE_START="$NODE_NET.10"
# Not "trainctl-<digits>": a local runner (`trainctl run`) removes empty cgroups of that form as
# its own dead runners' (src/local/cgroups.h), and the port base would read as a pid.
CGROUP_ROOT="trainctl-node-$(port_base)"
CNI_BIN_DIR="${TRAINCTL_CNI_BIN_DIR:-/usr/lib/cni}"
# The loopback registry's storage: in the cache, so images are built once.
REGISTRY_DIR="$(cache_root)/registry"
# Registry names mapped to the loopback registry (containerd's hosts directory): every name the
# project's manifests and the upstream examples use, and the common public ones.
MAPPED_REGISTRIES=(docker.io registry-1.docker.io ghcr.io quay.io registry.k8s.io k8s.gcr.io gcr.io
  nvcr.io public.ecr.aws mcr.microsoft.com registry.baidubce.com localhost)
PAUSE_TAG="3.10"
BUSYBOX_TAG="1.35"

pid_file() { echo "$STATE/run/$1.pid"; }

# Prints the pid of a running component of this cluster, or fails.  A pid file
# is trusted only if that process still runs the expected program with this
# state directory on its command line (pids get reused).
component_pid() {
  local name="$1" f pid
  f="$(pid_file "$name")"
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  local cmd
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmd" == */"$name "* && "$cmd" == *"$STATE/"* ]] || return 1
  echo "$pid"
}

# Every process of this cluster has the state directory on its command line;
# lists them (for down.sh's final check) without relying on pid files.
stray_pids() {
  local pid cmd
  for pid in $(pgrep -f -- "$STATE/" || true); do
    [[ "$pid" == "$$" ]] && continue
    cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
    [[ "$cmd" == *"$STATE/"* ]] || continue # pgrep matched a regex; check the literal path
    case "$cmd" in
      */etcd\ *|*/kube-apiserver\ *|*/kube-controller-manager\ *|*/kube-scheduler\ *|*/kwok\ *) echo "$pid" ;;
      */jobset-controller\ *|*/kueue-controller\ *) echo "$pid" ;;
    esac
  done
}

# ca_sign NAME SUBJECT EXTENSIONS...: $PKI/NAME.{key,crt} signed by up.sh's CA ($PKI/ca.*), for
# node.sh and controller.sh.
ca_sign() {
  local name="$1" subj="$2"; shift 2
  # Reused while valid, signed by the current CA and made for the same subject and names.
  local want
  want="$(printf '%s|' "$subj" "$@")"
  if [[ -s "$PKI/$name.crt" && "$(cat "$PKI/$name.recipe" 2>/dev/null)" == "$want" ]] &&
    openssl x509 -noout -checkend 86400 -in "$PKI/$name.crt" >/dev/null 2>&1 &&
    openssl verify -CAfile "$PKI/ca.crt" "$PKI/$name.crt" >/dev/null 2>&1; then
    return 0
  fi
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "$@" >"$PKI/$name.ext"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$name.key" 2>/dev/null
  chmod 600 "$PKI/$name.key"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -sha256 -extfile "$PKI/$name.ext" \
    -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
  echo "$want" >"$PKI/$name.recipe"
}

# cert_kubeconfig FILE NAME: a kubeconfig for the API server on 127.0.0.1 with the client
# certificate $PKI/NAME.{crt,key} (ca_sign).
cert_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainctl
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$PKI/ca.crt"}
users:
- name: $2
  user: {client-certificate: "$PKI/$2.crt", client-key: "$PKI/$2.key"}
contexts:
- name: trainctl
  context: {cluster: trainctl, user: $2}
current-context: trainctl
EOF
  chmod 600 "$1"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# alive PID: the process exists and is not a zombie (an orphan's zombie lingers
# until init reaps it).
alive() {
  local st
  st="$(sed -E 's/^.*\) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [[ -n "$st" && "$st" != Z ]]
}

# stop_component NAME: SIGTERM to a component started with its pid file, SIGKILL after 10 s,
# then the pid file removed.
stop_component() {
  local name="$1" pid i
  if pid="$(component_pid "$name")"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for (( i = 0; i < 100; i++ )); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "pid $pid did not exit 10s after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$(pid_file "$name")"
}

# wait_component_ready NAME TIMEOUT_S WHAT CHECK...: until CHECK succeeds. Dies with the log's
# tail when the component exits meanwhile, or naming WHAT and the log when time runs out.
wait_component_ready() {
  local name="$1" timeout_s="$2" what="$3" deadline
  shift 3
  deadline=$(( SECONDS + timeout_s ))
  until "$@"; do
    if ! component_pid "$name" >/dev/null; then
      tail -n 30 "$STATE/logs/$name.log" >&2
      die "$name exited while starting (log: $STATE/logs/$name.log)"
    fi
    (( SECONDS < deadline )) ||
      die "timed out after ${timeout_s}s waiting for $name's $what (log: $STATE/logs/$name.log)"
    sleep 0.2
  done
}
