#!/usr/bin/env python3
"""Replicas as containers (issue #39): what `trainctl run --runtime podman` costs against
`--runtime process` on the same job, and against starting the same containers by hand.

One PyTorchJob of 4 replicas (Master + 3 Workers); each replica touches a file named after its
rank in a shared host folder, then sleeps. Three sides, alternated run by run (process, podman,
by hand, process, …):

  process   trainctl run --runtime process
  podman    trainctl run --runtime podman
  by hand   4 × `podman run --rm --network host …` started at once from this script, with the
            same image, mount, rlimits and command (what a user would type without trainctl)

Measured per run: start latency = from the moment the command was started until each
replica's file appears (polled every 2 ms), median over the 4 replicas and the slowest; memory =
the resident set (RSS, from /proc) of every process serving the replicas 2 s after the last one
started, per replica: the runner's descendants (supervisors, runtime clients, replicas) and,
for containers, the runtime's monitors (conmon) and their descendants; the runner itself is
counted apart. The image is made here as in test/e2e/test_containers.py (busybox-static,
podman import) in a private podman storage; no registry is used.

  bench/container_start.py --runs 5
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
from test_containers import IMAGE, ENTRYPOINT, CMD, busybox_rootfs_tar, podman_env  # noqa: E402

TRAINCTL = os.environ.get("TRAINCTL_BIN", os.path.join(REPO, "build", "release", "trainctl"))
PODMAN = shutil.which("podman")
REPLICAS = 4
HOLD_S = 6


def manifest(name, out):
    def replica(kind, count):
        return f"""    {kind}:
      replicas: {count}
      restartPolicy: Never
      template:
        spec:
          volumes: [{{name: out, hostPath: {{path: {out}}}}}]
          containers:
          - name: pytorch
            image: {IMAGE}
            imagePullPolicy: IfNotPresent
            command: [sh, -c, "touch /out/$RANK; sleep {HOLD_S}"]
            volumeMounts: [{{name: out, mountPath: /out}}]
"""
    return ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
            f"metadata: {{name: {name}}}\nspec:\n  pytorchReplicaSpecs:\n"
            + replica("Master", 1) + replica("Worker", REPLICAS - 1))


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def processes():
    """pid -> (ppid, cmdline) for every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        out[int(entry)] = (ppid, cmd)
    return out


def descendants(roots, table):
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        for child, (ppid, _) in table.items():
            if ppid == pid and child not in found:
                found.add(child)
                todo.append(child)
    return found


def serving_rss_kib(root_pid, marker):
    """RSS of root_pid's descendants plus every conmon naming `marker` and its descendants."""
    table = processes()
    pids = descendants([root_pid], table)
    monitors = [p for p, (_, cmd) in table.items() if "conmon" in cmd and marker in cmd]
    pids |= set(monitors) | descendants(monitors, table)
    return sum(rss_kib(p) for p in pids)


def wait_files(out, started, deadline_s=120):
    seen = {}
    while len(seen) < REPLICAS and time.monotonic() - started < deadline_s:
        for name in os.listdir(out):
            if name not in seen:
                seen[name] = time.monotonic() - started
        time.sleep(0.002)
    if len(seen) < REPLICAS:
        raise RuntimeError(f"only {len(seen)} of {REPLICAS} replicas started in {deadline_s}s")
    return sorted(seen.values())


def one_run(side, work, env, host_flags, index):
    out = os.path.join(work, f"out-{side}-{index}")
    os.makedirs(out)
    name = f"bench-{side.replace(' ', '')}-{index}"
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(manifest(name, out))
    started = time.monotonic()
    if side == "by hand":
        procs = [subprocess.Popen(
            [PODMAN, "run", "--rm", "--name", f"{name}-{rank}", "--network", "host", *host_flags,
             "--env", f"RANK={rank}", "--volume", f"{out}:/out", "--entrypoint", "sh", IMAGE,
             "-c", f"touch /out/$RANK; sleep {HOLD_S}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for rank in range(REPLICAS)]
        root = os.getpid()
    else:
        runtime = "podman" if side == "podman" else "process"
        proc = subprocess.Popen([TRAINCTL, "run", path, "-q", "--runtime", runtime], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs, root = [proc], proc.pid
    times = wait_files(out, started)
    time.sleep(2)
    total = serving_rss_kib(root, name)
    runner = rss_kib(root) if side != "by hand" else 0
    for p in procs:
        if p.wait(timeout=120) != 0:
            raise RuntimeError(f"{side}: exit {p.returncode}")
    return {"median_s": statistics.median(times), "slowest_s": times[-1],
            "per_replica_mib": (total - runner) / 1024 / REPLICAS, "runner_mib": runner / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not PODMAN:
        sys.exit("podman is not installed (make deps installs it)")
    work = tempfile.mkdtemp(prefix="trainctl-bench-containers-")
    try:
        env = dict(os.environ, **podman_env(work), TRAINCTL_STATE_DIR=os.path.join(work, "state"))
        tar = os.path.join(work, "rootfs.tar")
        busybox_rootfs_tar(tar)
        subprocess.run([PODMAN, "import", "--change", f"ENTRYPOINT {ENTRYPOINT}", "--change",
                        f"CMD {CMD}", tar, IMAGE], env=env, check=True, capture_output=True)
        # The flags trainctl's pre-flight chose, so "by hand" starts what trainctl starts.
        dry = subprocess.run([TRAINCTL, "run", "--dry-run", "-o", "json", "--runtime", "podman",
                              "-"], input=manifest("probe", work), env=env, cwd=work,
                             capture_output=True, text=True, check=True)
        argv = json.loads(dry.stdout)["replicas"][0]["command"]
        host_flags = []
        for i, a in enumerate(argv):
            if a in ("--ulimit", "--runtime"):
                host_flags += [a, argv[i + 1]]
        sides = ["process", "podman", "by hand"]
        results = {s: [] for s in sides}
        for index in range(args.runs):
            for side in sides:
                results[side].append(one_run(side, work, env, host_flags, index))
        print(f"{REPLICAS} replicas, {args.runs} alternated runs per side; median (range)\n")
        print("| side | start, median replica (s) | start, slowest replica (s) | "
              "memory per replica (MiB) | runner (MiB) |")
        print("|---|---|---|---|---|")
        for side in sides:
            def col(key, digits=2):
                values = [r[key] for r in results[side]]
                return (f"{statistics.median(values):.{digits}f} "
                        f"({min(values):.{digits}f}–{max(values):.{digits}f})")
            print(f"| {side} | {col('median_s')} | {col('slowest_s')} | "
                  f"{col('per_replica_mib', 1)} | {col('runner_mib', 1)} |")
        med = {s: statistics.median(r["slowest_s"] for r in results[s]) for s in sides}
        print(f"\npodman / process (slowest replica): {med['podman'] / med['process']:.1f}x; "
              f"trainctl over by hand: {med['podman'] - med['by hand']:+.2f} s")
    finally:
        subprocess.run([PODMAN, "rm", "--all", "--force"], env=dict(os.environ, **podman_env(work)),
                       capture_output=True)
        subprocess.run([PODMAN, "system", "reset", "--force"],
                       env=dict(os.environ, **podman_env(work)), capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
