#!/usr/bin/env bash
# Scale benchmark, side by side, in one run on one private cluster (operator_bench_cluster.sh):
# the operators chosen with --impl and the API floor, same flags, same CRDs, same identity, one
# after the other (in alternating order when repeated); one table with times, peak RSS, CPU
# seconds and API requests by verb and resource. Results: docs/benchmarks.md.
#
#   bench/operator_scale.sh [--impl trainctl,baseline,upstream,floor] [--jobs 1000] [--replicas 8]
#                           [--qps 20] [--burst 30] [--threads 4] [--run-seconds 30] [--repeat 1]
#                           [--settle-seconds 0] [--compact-etcd 1]
#                           [--kind pytorchjob|mpijob-v2|trainjob] [--workers 4]
#
# --impl upstream builds the upstream operator first (hack/upstream/build.sh, cached).
# --kind mpijob-v2 submits MPIJobs of kubeflow.org/v2beta1 (1 launcher, --workers workers; the
# launcher runs --run-seconds) instead of PyTorchJobs; --impl mpi-operator then builds mpi-operator
# first (hack/upstream/build.sh --mpi-operator) and runs it as one side, with its own CRD.
# --kind trainjob hands over to bench/trainjob_scale.py (its flags: --impl trainctl,trainer,floor,
# --jobs, --nodes, --run-seconds, --qps, --burst, --threads): TrainJobs on the real JobSet
# controller in a cluster of its own, trainctl against upstream Trainer v2.3.0's controller
# (hack/upstream/build.sh --trainer, hack/upstream/trainer.sh) and the same JobSets created directly.
# --impl baseline --baseline PATH runs another trainctl build as one more side, for a before and
# after in one run (e.g. a copy of build/release/trainctl taken before a change).
# --repeat N runs every side N times (odd rounds in reverse order) and adds a table of per-side
# medians and ranges, "vs floor" paired by round (bench/run_summary.h).
# --settle-seconds N keeps each operator running N s after its last job succeeded before its
# CPU, memory and requests are read (the work after a job's end: history records, TTL).
# --compact-etcd 1 (the default) compacts etcd's history and defragments its file before every
# run, and logs the size the run before left (bench/etcd_maintenance.h); 0 leaves it.
# Then what each run wrote: job status writes by cause and events by reason (bench/audit_writes.py).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${TRAINCTL_BENCH_BIN:-$root/build/release/bench/operator_scale_bench}"
_args=("$@")
for ((_i = 0; _i + 1 < ${#_args[@]}; _i++)); do
  if [[ "${_args[$_i]}" == --kind && "${_args[$((_i + 1))]}" == trainjob ]]; then
    exec /usr/bin/python3 "$root/bench/trainjob_scale.py" "$@"
  fi
done
# The benchmark programs are not in the default build: build this one (a no-op when current).
[[ -n "${TRAINCTL_BENCH_BIN:-}" ]] || cmake --build "$root/build/release" --target operator_scale_bench >&2
# shellcheck source=operator_bench_cluster.sh
source "$root/bench/operator_bench_cluster.sh" "$@"
"$bin" --trainctl "$root/build/release/trainctl" "${upstream[@]}" "$@"
# What each run wrote, by cause and by reason, from this cluster's audit log while it is still
# there (the next benchmark run makes the cluster and its log afresh). Runs are told apart by
# their namespaces, one a side and round.
echo
echo "What each run wrote (bench/audit_writes.py --gap 0)"
python3 "$root/bench/audit_writes.py" --gap 0 "$TRAINCTL_CLUSTER_DIR/audit.log" ||
  echo "bench/audit_writes.py failed; the audit log is $TRAINCTL_CLUSTER_DIR/audit.log" >&2
