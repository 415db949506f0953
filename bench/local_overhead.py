#!/usr/bin/env python3
"""Start-up overhead of `trainctl run` against launching the same work directly.

Three comparisons, each measured in this one run, alternating the two sides to share the
machine's state fairly, reporting the median wall time of N rounds and the ratio:

  1. empty job: a 1-replica job whose command is `true`, against running `true` directly
     (pure runner overhead: load + validate + state folder + spawn + reap + final write);
  2. PyTorch DDP, 2 processes: examples/pytorch/pytorchjob.yaml (Master + Worker) against
     the same two `python3 train_ddp.py` processes started by hand with MASTER_ADDR,
     MASTER_PORT, WORLD_SIZE and RANK set (the least any launcher can do);
  3. the same job against `torchrun --standalone --nproc_per_node=2 train_ddp.py`, the usual
     way to start it on one machine;
  4. the torchrun example (2 nodes x 2 processes) against `torchrun --standalone
     --nproc_per_node=4 train_ddp.py`;
  5. the same training as a Trainer v2 TrainJob (examples/pytorch/trainjob.yaml: 2 nodes x 2
     processes on the built-in torch-distributed) against the torchrun example as a PyTorchJob,
     both through `trainctl run` (the PyTorchJob in the "direct" column).

With --first-step, comparison 5 measures from the start of `trainctl run` to rank 0's first
optimizer step (train_ddp.py writes its time to TRAIN_DDP_FIRST_STEP_FILE) instead of the
whole run.

Usage: bench/local_overhead.py [--rounds N] [--trainctl PATH] [--only trainjob] [--first-step]
Run it with the project venv first on PATH (make bench does), so python3/torchrun see torch.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples", "pytorch")

EMPTY_JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: empty}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers: [{name: pytorch, image: none, command: ["true"]}]
"""


def timed(argv, cwd, env):
    began = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - began
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed with {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed


def timed_by_hand(argv, world, cwd, env):
    """Starts `world` copies of argv with the env:// rendezvous variables set, waits for all."""
    began = time.perf_counter()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True,
                              env=dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                                       WORLD_SIZE=str(world), RANK=str(rank)))
             for rank in range(world)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{' '.join(argv)} failed with {p.returncode}:\n{err[-2000:]}")
    return time.perf_counter() - began


def to_first_step(argv, cwd, env):
    """Seconds from starting argv to the first step train_ddp.py reports; waits for the end."""
    fd, mark = tempfile.mkstemp(prefix="first-step-")
    os.close(fd)
    os.unlink(mark)
    began = time.time()
    timed(argv, cwd, dict(env, TRAIN_DDP_FIRST_STEP_FILE=mark))
    try:
        with open(mark) as f:
            stepped = float(f.read())
    except (OSError, ValueError):
        sys.exit(f"{' '.join(argv)}: rank 0 reported no first step in {mark}")
    os.unlink(mark)
    return stepped - began


def compare_first_step(name, a_argv, b_argv, rounds, cwd, env):
    a, b = [], []
    for _ in range(rounds):
        a.append(to_first_step(a_argv, cwd, env))
        b.append(to_first_step(b_argv, cwd, env))
    da, db = statistics.median(a), statistics.median(b)
    print(f"| {name}, start to first step | {da * 1000:.0f} ms | {db * 1000:.0f} ms | "
          f"{db - da:+.3f} s | {db / da:.2f} |", flush=True)


def compare(name, direct, via_trainctl, rounds, cwd, env):
    a, b = [], []
    for _ in range(rounds):
        a.append(direct(cwd, env) if callable(direct) else timed(direct, cwd, env))
        b.append(timed(via_trainctl, cwd, env))
    da, db = statistics.median(a), statistics.median(b)
    print(f"| {name} | {da * 1000:.0f} ms | {db * 1000:.0f} ms | {db - da:+.3f} s | "
          f"{db / da:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trainctl", default=os.path.join(REPO, "build", "release", "trainctl"))
    parser.add_argument("--only", choices=["trainjob"], help="run only that comparison")
    parser.add_argument("--first-step", action="store_true",
                        help="comparison 5 to the first training step, not the whole run")
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="trainctl-bench-")
    # The torchrun workaround of the example manifests (torch 1.13 on Python 3.11), for the
    # direct runs too; see examples/pytorch/pytorchjob-torchrun.yaml.
    env = dict(os.environ, TRAINCTL_STATE_DIR=state, PET_REDIRECTS="9:1", PET_TEE="9:1")
    with open(os.path.join(state, "empty.yaml"), "w") as f:
        f.write(EMPTY_JOB)
    run = [args.trainctl, "run", "--replace", "-q"]
    print(f"rounds={args.rounds}, median wall time per side")
    print("| workload | direct | trainctl run | difference | ratio |")
    print("|---|---|---|---|---|")
    if args.only == "trainjob" and args.first_step:
        compare_first_step("TrainJob 2 × 2 (torch-distributed) against the PyTorchJob 2 × 2",
                           run + ["pytorchjob-torchrun.yaml"], run + ["trainjob.yaml"],
                           args.rounds, EXAMPLES, env)
        subprocess.run(["rm", "-rf", state])
        return
    if args.only == "trainjob":
        compare("TrainJob 2 × 2 (torch-distributed) against the PyTorchJob 2 × 2",
                run + ["pytorchjob-torchrun.yaml"], run + ["trainjob.yaml"], args.rounds,
                EXAMPLES, env)
        subprocess.run(["rm", "-rf", state])
        return
    compare("empty job (`true`)", ["true"], run + [os.path.join(state, "empty.yaml")],
            args.rounds, state, env)
    ddp_args = ["train_ddp.py", "--epochs", "20"]
    compare("DDP 2 processes, started by hand",
            lambda cwd, e: timed_by_hand(["python3", *ddp_args], 2, cwd, e),
            run + ["pytorchjob.yaml"], args.rounds, EXAMPLES, env)
    compare("DDP 2 processes, torchrun", ["torchrun", "--standalone", "--nproc_per_node=2", *ddp_args],
            run + ["pytorchjob.yaml"], args.rounds, EXAMPLES, env)
    compare("DDP 4 processes (torchrun example)",
            ["torchrun", "--standalone", "--nproc_per_node=4", "train_ddp.py"],
            run + ["pytorchjob-torchrun.yaml"], args.rounds, EXAMPLES, env)
    compare("TrainJob 2 × 2 (torch-distributed) against the PyTorchJob 2 × 2",
            run + ["pytorchjob-torchrun.yaml"], run + ["trainjob.yaml"], args.rounds, EXAMPLES, env)
    subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    main()
