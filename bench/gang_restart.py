#!/usr/bin/env python3
"""Gang restart latency of `trainctl run` (issue #38; docs/benchmarks.md, "Gang restart"): a
PyTorchJob with `trainctl.dev/restart-scope: Gang` and N replicas (1 Master + N-1 Workers, each
a shell loop) whose Worker 0 exits 1 once. Measured from the failing replica's last moment (it
writes its clock just before exiting) to the moment the last replica of attempt 1 has started
(each writes its clock on start), in one `trainctl run` per round, median of the rounds.

Every replica of attempt 0 stops on SIGTERM at once, so the time is the runner's: noticing the
exit, recording the attempt, stopping every process group and waiting until each is gone,
choosing fresh ports, starting N replicas. The target (issue #38) is ≤ the grace period + 2 s;
here the replicas leave on SIGTERM, so the grace period is not spent.

Usage: bench/gang_restart.py [--replicas 8 64] [--rounds 3] [--trainctl PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
now() { date +%s.%N; }
if [ "$TRAINCTL_RESTART_ATTEMPT" = 0 ]; then
  if [ "$RANK" = 1 ]; then sleep 2; now > "$OUT/failed"; exit 1; fi
  exec sleep 600
fi
now > "$OUT/started-$RANK"
sleep 1
"""

JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: gang-bench
  annotations: {{trainctl.dev/restart-scope: Gang}}
spec:
  runPolicy: {{backoffLimit: 1}}
  pytorchReplicaSpecs:
"""

REPLICA = """    {type}:
      replicas: {count}
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            env: [{{name: OUT, value: "{out}"}}]
            command: [sh, -c, {script}]
"""


def one_round(trainctl, replicas, work):
    out = tempfile.mkdtemp(dir=work)
    path = os.path.join(out, "job.yaml")
    with open(path, "w") as f:
        f.write(JOB.format() + "".join(REPLICA.format(type=t, count=n, out=out, script=json.dumps(SCRIPT))
                                       for t, n in (("Master", 1), ("Worker", replicas - 1))))
    env = dict(os.environ, TRAINCTL_STATE_DIR=os.path.join(out, "state"))
    proc = subprocess.run([trainctl, "run", path, "-o", "json"], env=env, capture_output=True,
                          text=True, timeout=600)
    job = json.loads(proc.stdout)
    last = job["status"]["conditions"][-1]["type"]
    if last != "Succeeded":
        sys.exit(f"round failed ({last}):\n{proc.stderr[-3000:]}")
    failed = float(open(os.path.join(out, "failed")).read())
    started = [float(open(os.path.join(out, f"started-{r}")).read()) for r in range(replicas)]
    return max(started) - failed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replicas", type=int, nargs="+", default=[8, 64])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trainctl", default=os.path.join(REPO, "build", "release", "trainctl"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainctl-gang-bench-") as work:
        for n in args.replicas:
            times = [one_round(args.trainctl, n, work) for _ in range(args.rounds)]
            print(f"1 x {n} replicas: failure -> every replica of attempt 1 started: "
                  f"median {statistics.median(times):.2f} s (rounds: "
                  f"{', '.join(f'{t:.2f}' for t in times)})", flush=True)


if __name__ == "__main__":
    main()
