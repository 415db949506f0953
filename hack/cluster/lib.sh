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

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

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
    esac
  done
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# alive PID: the process exists and is not a zombie (an orphan's zombie lingers
# until init reaps it).
alive() {
  local st
  st="$(sed -E 's/^.*\) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
  [[ -n "$st" && "$st" != Z ]]
}
