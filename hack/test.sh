#!/usr/bin/env bash
# `make test`: every test — the release tree's CTest (unit, e2e, SDK, integration, the real
# node), then the sanitized tree's unit, fast e2e and fuzz tests.
#
# The long builds that only later steps need run in the background, niced, from the moment
# they can start: the test control plane's Go build (hack/cluster/build.sh, needed first by
# `cluster.up`) and then the real node's images (hack/cluster/images.sh, needed by `node.up`
# and the fine-tuning module) from the start; the sanitized tree once the release tree is
# built. They take the CPU the foreground leaves idle (the e2e and integration suites wait on
# processes, the API server and the kubelet far more than they compute) instead of running
# alone later. None is required to succeed: `cluster.up` and `node.up` run build.sh and
# images.sh themselves (they wait for the background ones through their locks, then find what
# they built), and a failed sanitized build is reported with its log before the sanitized tests
# would start. docs/testing.md, "Cold time".
#
# Prints how long each step took at the end. Exit status: 0 when every step passed.
# Logs of the background builds: build/test-logs/.
set -uo pipefail
cd "$(dirname "$0")/.."

preset="${PRESET:-release}"
logs=build/test-logs
mkdir -p "$logs"
t_start=$SECONDS
status=0
summary=()
note() { printf 'make test: %s\n' "$*" >&2; }
step_done() { # name seconds
  summary+=("$(printf '%-34s %5d s' "$1" "$2")")
}

# Background jobs run in their own process group (setsid), so an interrupt or an early exit
# stops them with everything they started (go, ninja, the compilers).
bg_pids=()
stop_background() {
  local pid
  for pid in "${bg_pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
}
trap stop_background EXIT
trap 'exit 130' INT TERM

# start_bg NAME COMMAND...: runs COMMAND niced in the background, logging to $logs/NAME.log,
# and writes its exit status and duration to $logs/NAME.status when it ends.
start_bg() {
  local name="$1"; shift
  rm -f "$logs/$name.status"
  # setsid makes a new session, and with the kernel's autogroups (sched_autogroup_enabled) a
  # session is scheduled as one group: the group itself is niced, or it would get half the CPU.
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; t0=$SECONDS; nice -n 19 "$@" >"$0.log" 2>&1; rc=$?; echo "$rc $((SECONDS - t0))" >"$0.status"' \
    "$logs/$name" "$@" </dev/null &
  bg_pids+=("$!")
}

# wait_bg NAME PID: waits for a background job; prints its log's tail when it failed. Returns
# its exit status.
wait_bg() {
  local name="$1" pid="$2" t0=$SECONDS rc secs
  wait "$pid" 2>/dev/null || true
  if [[ ! -s "$logs/$name.status" ]]; then
    note "$name: ended without a status (log: $logs/$name.log)"
    return 1
  fi
  read -r rc secs <"$logs/$name.status"
  step_done "$name (background)" "$secs"
  step_done "  waited for it" "$((SECONDS - t0))"
  if [[ "$rc" != 0 ]]; then
    tail -n 40 "$logs/$name.log" >&2
    note "$name failed (exit $rc; log: $logs/$name.log)"
  fi
  return "$rc"
}

t=$SECONDS
hack/install-deps.sh test || exit
step_done "dependencies" "$((SECONDS - t))"

# The control plane's programs (Go, from the module proxy into the cache), then the real node's
# images and the fine-tuning ones (into the registry's storage in the cache) where a real node
# can run here (as `node.up` would judge it, with its port base): minutes when cold, nothing
# when cached.
start_bg control-plane bash -c '
  hack/cluster/build.sh >/dev/null || exit
  if ! why="$(TRAINCTL_PORT_BASE=29600 hack/cluster/node.sh check)"; then
    echo "no images: the real node cannot start here: $why"; exit 0
  fi
  exec hack/cluster/images.sh --own-registry pause busybox alpine examples kubectl-delivery trainer initializer'
cp_pid="${bg_pids[-1]}"

t=$SECONDS
cmake --preset "$preset" >/dev/null && cmake --build --preset "$preset" || exit
step_done "release build" "$((SECONDS - t))"

if cmake --preset debug >"$logs/sanitized-configure.log" 2>&1; then
  start_bg sanitized-build cmake --build --preset debug
  san_pid="${bg_pids[-1]}"
else
  cat "$logs/sanitized-configure.log" >&2
  note "configuring the sanitized tree failed"
  exit 1
fi

t=$SECONDS
ctest --preset "$preset" || status=1
step_done "release tests" "$((SECONDS - t))"

# cluster.up and node.up have waited for it (through the locks); this only collects its status.
wait_bg control-plane "$cp_pid" || true

if wait_bg sanitized-build "$san_pid"; then
  t=$SECONDS
  ctest --preset debug -L 'unit|fast|fuzz' || status=1
  step_done "sanitized tests" "$((SECONDS - t))"
else
  status=1
fi

step_done "make test, in all" "$((SECONDS - t_start))"
printf '%s\n' "make test: times" "${summary[@]}" >&2
(( status == 0 )) && note "every step passed" || note "FAILED (see above)"
exit "$status"
