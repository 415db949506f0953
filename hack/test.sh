#!/usr/bin/env bash
# `make test`: every test — the release tree's CTest (unit, e2e, SDK, integration, the real
# node), then the sanitized tree's unit, fast e2e and fuzz tests.
#
# The long builds that only later steps need run in the background, niced: the test control
# plane's Go build first (hack/cluster/build.sh control-plane, needed by `cluster.up`) beside
# the real node's base images at SCHED_IDLE (hack/cluster/images.sh: pause, busybox, alpine,
# the examples'),
# then the JobSet controller's (hack/jobset/build.sh, needed by `jobset.up`), Kueue's
# (hack/kueue/build.sh, needed by `kueue.up`) and CoreDNS's
# (needed by `node.up`) beside the node's other images (the rest of the node's first, which
# `node.up` finds without waiting for the lock, then the fine-tuning module's) beside the
# sanitized tree, which builds on the CPU the images leave and runs its tests while the
# integration suites wait on their clusters. They take the CPU the foreground leaves idle (the
# e2e and integration suites wait on processes, the API server and the kubelet far more than
# they compute) instead of running alone later. None is required to succeed: `cluster.up` and
# `node.up` run build.sh and images.sh themselves (they wait for the background ones through
# their locks, then find what they built), and a failed sanitized build or test is reported
# with its log's tail. docs/testing.md, "Cold time".
#
# Prints how long each step took at the end. Exit status: 0 when every step passed.
# Logs of the background builds: build/test-logs/.
set -uo pipefail
cd "$(dirname "$0")/.."

preset="${PRESET:-release}"
logs=build/test-logs
mkdir -p "$logs"

# hack/test.sh --background: the chain of background builds (started below, niced). Each step
# writes $logs/STEP.log and "EXIT-STATUS SECONDS" to $logs/STEP.status.
if [[ "${1:-}" == --background ]]; then
  step() { # name command...
    local name="$1" t0=$SECONDS rc=0; shift
    "$@" >"$logs/$name.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t0))" >"$logs/$name.status"
  }
  node_can_start() {
    local why
    if ! why="$(TRAINCTL_PORT_BASE=29600 hack/cluster/node.sh check)"; then
      echo "no images: the real node cannot start here: $why"
      return 1
    fi
  }
  # The node's base images need neither the release build nor the control plane (mostly
  # downloads and unpacking, the examples' base the longest): built from the start beside the
  # control plane's Go build, but at SCHED_IDLE, so they take only the CPU that build leaves
  # while it waits (beside it at the same nice, they halved its CPU: `cluster.up` of 55a7697's
  # cold run waited 610 s for a control plane that took 1,913 s).
  base_images() {
    node_can_start || return 0
    local idle=(chrt --idle 0)
    "${idle[@]}" true 2>/dev/null || idle=()  # where SCHED_IDLE is refused: the chain's nice
    "${idle[@]}" hack/cluster/images.sh --own-registry pause busybox alpine examples
  }
  images() {
    node_can_start || return 0
    # After the base images (one images.sh writes at a time); the operator's image carries the
    # release build's binary, and the MPI launcher's init container the control plane's kubectl.
    until [[ -e "$logs/base-images.status" && -e "$logs/release-build.done" ]]; do sleep 5; done
    # Two runs: a `node.up` waiting on the lock gets it between them (the second spends its
    # first seconds on its read-only pass). The first has the rest of what the node's first
    # suites take: they find it without the lock while the second builds what only the last
    # suites use.
    hack/cluster/images.sh --own-registry kubectl-delivery operator &&
      hack/cluster/images.sh --own-registry trainer initializer trainer-runtimes || return
    # Kueue's e2e images once the Go chain has built what they pack (Kueue, JobSet, agnhost):
    # images.sh's lock is then held for packing only, never for a Go build, so a node suite's
    # `images.sh operator` does not wait behind one (a cold run's test_mpi_v2 waited 900 s).
    until [[ -e "$logs/kueue-e2e.status" ]]; do sleep 5; done
    hack/cluster/images.sh --own-registry kueue-e2e
  }
  # The sanitized tree beside the images: SCHED_IDLE, so the compiler takes the CPU that the
  # images' build (waiting on downloads and the registry more than it computes) leaves, and
  # node.up is not kept waiting. Its tests then run two at a time at the chain's nice, but
  # only once the foreground has reached the integration suites (which wait on the clusters),
  # never beside the local e2e suites; the `alone` ones are left to the foreground's end.
  sanitized() {
    local idle=(chrt --idle 0)
    "${idle[@]}" true 2>/dev/null || idle=()  # where SCHED_IDLE is refused: the chain's nice
    step sanitized-build "${idle[@]}" bash -c 'cmake --preset debug >/dev/null && cmake --build --preset debug'
    [[ "$(cut -d' ' -f1 "$logs/sanitized-build.status")" == 0 ]] || return 0
    until [[ -e "$logs/integration.started" ]]; do sleep 5; done
    step sanitized-tests ctest --preset debug -L 'unit|fast|fuzz' -LE alone -j "$(nproc)"
  }
  # CoreDNS only for the real node, after the JobSet controller: `cluster.up` needs neither.
  step base-images base_images &
  step control-plane hack/cluster/build.sh control-plane
  step images images &
  # Then upstream Trainer's and Kueue's e2e suites (go test -c), which only the node's last
  # suites run.
  { step jobset hack/jobset/build.sh; step kueue hack/kueue/build.sh
    step coredns hack/cluster/build.sh coredns
    if node_can_start; then
      step trainer-e2e hack/upstream/trainer-e2e.sh build
      step kueue-e2e hack/upstream/kueue-e2e.sh build
    else echo "0 0" >"$logs/trainer-e2e.status"; echo "0 0" >"$logs/kueue-e2e.status"; fi; } &
  sanitized &
  wait
  exit 0
fi
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

# The background chain runs in a new session niced as a whole: with the kernel's autogroups
# (sched_autogroup_enabled) a session is scheduled as one group, which would otherwise get half
# the CPU whatever its processes' nice.
start_background() {
  rm -f "$logs"/{control-plane,base-images,images,jobset,kueue,coredns,trainer-e2e,kueue-e2e,sanitized-build,sanitized-tests}.status \
    "$logs/integration.started" "$logs/release-build.done"
  setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' \
    background hack/test.sh --background </dev/null >"$logs/background.log" 2>&1 &
  bg_pids+=("$!")
}

# step_status NAME: how a background step ended (its log's tail when it failed). Returns its
# exit status.
step_status() {
  local name="$1" rc secs
  if [[ ! -s "$logs/$name.status" ]]; then
    note "$name: ended without a status (log: $logs/$name.log)"
    return 1
  fi
  read -r rc secs <"$logs/$name.status"
  step_done "$name (background)" "$secs"
  if [[ "$rc" != 0 ]]; then
    tail -n 40 "$logs/$name.log" >&2
    note "$name failed (exit $rc; log: $logs/$name.log)"
  fi
  return "$rc"
}

# The Debian packages first (the background builds need Go, clang and the image tools), then
# the background chain, then the venv's pinned PyPI sets (downloads, mostly) beside it.
t=$SECONDS
hack/install-deps.sh test --packages || exit
start_background
bg_pid="${bg_pids[-1]}"
hack/install-deps.sh test || exit
step_done "dependencies" "$((SECONDS - t))"

# A tree made from nothing is a unity build (32 files a batch): a clean release build took
# 309 s instead of 489 s, 617 s of CPU instead of 945 s (2026-11-29). A tree that exists keeps
# its setting, so a developer's per-file tree stays one (a one-file edit: 6 s, not 45 s).
t=$SECONDS
unity=()
[[ -f "build/$preset/CMakeCache.txt" ]] ||
  unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=32)
cmake --preset "$preset" "${unity[@]}" >/dev/null && cmake --build --preset "$preset" || exit
touch "$logs/release-build.done"
step_done "release build" "$((SECONDS - t))"

# What needs no cluster first (unit, e2e, the SDK's local suites), so the control plane's
# build in the background has that time before `cluster.up` needs it; then the integration
# suites with their clusters.
t=$SECONDS
ctest --preset "$preset" -LE integration || status=1
step_done "release tests without a cluster" "$((SECONDS - t))"
t=$SECONDS
touch "$logs/integration.started"
ctest --preset "$preset" -L integration || status=1
step_done "release integration tests" "$((SECONDS - t))"

# cluster.up and node.up have waited for their parts (through the locks); the sanitized tests
# wait for the rest of the chain.
t=$SECONDS
wait "$bg_pid" 2>/dev/null || true
step_done "waited for the background builds" "$((SECONDS - t))"
step_status control-plane || true
step_status jobset || true
step_status kueue || true
step_status coredns || true
step_status trainer-e2e || true
step_status kueue-e2e || true
step_status base-images || true
step_status images || true
if step_status sanitized-build; then
  step_status sanitized-tests || status=1
  t=$SECONDS
  # The suites that need the machine alone (label `alone`), now that nothing else runs.
  ctest --preset debug -L 'unit|fast|fuzz' -L alone || status=1
  step_done "sanitized tests run alone" "$((SECONDS - t))"
else
  status=1
fi

step_done "make test, in all" "$((SECONDS - t_start))"
printf '%s\n' "make test: times" "${summary[@]}" >&2
(( status == 0 )) && note "every step passed" || note "FAILED (see above)"
exit "$status"
