#!/usr/bin/env bash
# Stops the trainctl test control plane started by up.sh and checks that none
# of its processes is left.  Keeps the build cache and, unless --purge is
# given, the state directory (etcd data, certificates, logs), so a later up.sh
# resumes the same cluster.
#
#   hack/cluster/down.sh [--purge]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"

purge=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) die "down.sh: unknown argument $arg" ;;
  esac
done

STATE="${TRAINCTL_CLUSTER_DIR:-$(repo_root)/.cluster}"
if [[ ! -d "$STATE" ]]; then
  log "no cluster state at $STATE; nothing to stop"
  exit 0
fi
STATE="$(cd "$STATE" && pwd)"
t0=$SECONDS
exec 8>"$STATE/.lock" # shared with up.sh
if ! flock -n 8; then
  log "up.sh/down.sh is running for $STATE; waiting for it"
  flock 8
fi

wait_gone() { # seconds pids...
  local deadline=$(( SECONDS + $1 )); shift
  local p any
  while :; do
    any=0
    for p in "$@"; do alive "$p" && any=1; done
    (( any )) || return 0
    (( SECONDS < deadline )) || return 1
    sleep 0.1
  done
}

all_pids=()
# stop_group SECONDS NAME...: SIGTERM, wait, then SIGKILL what is left.
stop_group() {
  local grace="$1"; shift
  local name pid pids=() p
  for name in "$@"; do
    if pid="$(component_pid "$name")"; then
      log "stopping $name (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid") all_pids+=("$pid")
    fi
    rm -f "$(pid_file "$name")"
  done
  (( ${#pids[@]} )) || return 0
  if ! wait_gone "$grace" "${pids[@]}"; then
    for p in "${pids[@]}"; do
      if alive "$p"; then log "pid $p did not exit ${grace}s after SIGTERM; sending SIGKILL"; kill -KILL "$p" 2>/dev/null || true; fi
    done
    wait_gone 5 "${pids[@]}" || true
  fi
}

# Stop in reverse start order, one tier at a time: the API server's clients
# first, then the API server, etcd last.  While any client still holds a watch
# (e.g. an operator under test that was not stopped) the API server's graceful
# shutdown waits up to its 60 s request timeout; it keeps no state of its own,
# so after 10 s it is killed.
# Kueue first (while the API server can still delete its webhook configurations), then the JobSet
# controller (it would make again the Jobs that node.sh down deletes), while
# the API server can still delete its webhook configurations (jobset.sh).
if [[ -d "$STATE/kueue" ]]; then
  TRAINCTL_CLUSTER_DIR="$STATE" "$here/kueue.sh" down || log "warning: kueue.sh down failed"
fi
if [[ -d "$STATE/jobset" ]]; then
  TRAINCTL_CLUSTER_DIR="$STATE" "$here/jobset.sh" down || log "warning: jobset.sh down failed"
fi
# A real node next, while the API server can still delete its pods (node.sh).
if [[ -d "$STATE/node" ]]; then
  TRAINCTL_CLUSTER_DIR="$STATE" "$here/node.sh" down || log "warning: node.sh down failed; see node.sh leftovers"
fi
stop_group 10 kwok kube-scheduler kube-controller-manager
stop_group 10 kube-apiserver
stop_group 15 etcd

# Anything of this cluster that has no pid file (e.g. a pid file was deleted).
mapfile -t strays < <(stray_pids)
if (( ${#strays[@]} )); then
  for pid in "${strays[@]}"; do
    log "stopping stray process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"
    kill -TERM "$pid" 2>/dev/null || true
    all_pids+=("$pid")
  done
  if ! wait_gone 15 "${strays[@]}"; then
    for pid in "${strays[@]}"; do alive "$pid" && kill -KILL "$pid" 2>/dev/null || true; done
    wait_gone 5 "${strays[@]}" || true
  fi
fi

mapfile -t left < <(stray_pids)
if (( ${#left[@]} )); then
  ps -o pid,cmd -p "$(IFS=,; echo "${left[*]}")" >&2 || true
  die "processes of the cluster at $STATE are still running: ${left[*]}"
fi

# The daemons were orphaned when up.sh exited, so PID 1 reaps them; until it
# does, ps shows them as <defunct>.  Give it a moment (cosmetic only: a zombie
# holds no port, file or memory).
for (( i = 0; i < 50; i++ )); do
  any=0
  for pid in "${all_pids[@]}"; do [[ -e "/proc/$pid" ]] && any=1; done
  (( any )) || break
  sleep 0.1
done

if (( purge )); then
  rm -rf "$STATE"
  log "removed $STATE"
fi
log "cluster stopped in $(( SECONDS - t0 ))s; no process left (checked with pgrep)"
