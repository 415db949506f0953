#!/usr/bin/env python3
"""TrainerClient's start-up overhead on this machine: from the `train()` call to rank 0's first
optimizer step, against the same function started by hand with torchrun.

  trainctl   TrainerClient(backend="local").train(runtime="torch-distributed",
             trainer=CustomTrainer(func, num_nodes=2)): two torchrun agents of one process
             each, wired by the runtime's PET_* env, through `trainctl run`;
  by hand    the same function's source (and its call) in a file, `torchrun --standalone
             --nproc_per_node=2 file`: the usual way to start it on one machine, world 2 alike.

The function (bench/trainer_client_func.py) trains a small DDP model over gloo and writes the
time of rank 0's first step to a file. The two sides alternate for N rounds (the machine's
state shared fairly); the medians and their ratio are printed as a Markdown row. Run it with
the project venv first on PATH (its python has the SDK; torchrun is Debian's).

Usage: bench/trainer_client_overhead.py [--rounds N] [--trainctl PATH]
"""

import argparse
import inspect
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "sdk", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainer_client_func import train_to_first_step  # noqa: E402


def read_mark(mark, who):
    try:
        with open(mark) as f:
            return float(f.read())
    except (OSError, ValueError):
        sys.exit(f"{who}: rank 0 reported no first step in {mark}")


def by_hand(folder, env):
    """Seconds from starting torchrun to the first step; waits for the end."""
    mark = os.path.join(folder, "first-step")
    script = os.path.join(folder, "by_hand.py")
    with open(script, "w") as f:
        f.write(inspect.getsource(train_to_first_step))
        f.write(f"\ntrain_to_first_step(mark={mark!r})\n")
    began = time.time()
    proc = subprocess.run(["torchrun", "--standalone", "--nnodes=1", "--nproc_per_node=2", script],
                          cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f"torchrun by hand failed with {proc.returncode}:\n{proc.stderr[-2000:]}")
    stepped = read_mark(mark, "torchrun by hand")
    os.unlink(mark)
    return stepped - began


def through_client(folder, client, CustomTrainer):
    """Seconds from the train() call to the first step; waits for Complete, deletes the job."""
    mark = os.path.join(folder, "first-step")
    began = time.time()
    name = client.train(runtime="torch-distributed", trainer=CustomTrainer(
        func=train_to_first_step, func_args={"mark": mark}, num_nodes=2))
    job = client.wait_for_job_status(name, timeout=300, polling_interval=0.5)
    stepped = read_mark(mark, f"TrainJob {name} ({job.status})")
    client.delete_job(name)
    os.unlink(mark)
    return stepped - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trainctl", default=os.path.join(REPO, "build", "release", "trainctl"))
    a = parser.parse_args()
    os.environ["TRAINCTL_BIN"] = a.trainctl
    from trainctl import CustomTrainer, TrainerClient
    from trainctl.backends.local import torchrun_workaround_env

    env = dict(os.environ, **torchrun_workaround_env())
    folder = tempfile.mkdtemp(prefix="trainctl-tc-overhead-")
    try:
        client = TrainerClient(backend="local", state_dir=os.path.join(folder, "state"))
        hand, ours = [], []
        for _ in range(a.rounds):
            hand.append(by_hand(folder, env))
            ours.append(through_client(folder, client, CustomTrainer))
        dh, do = statistics.median(hand), statistics.median(ours)
        print("| workload | torchrun by hand | TrainerClient.train() | difference | ratio |")
        print("|---|---|---|---|---|")
        print(f"| DDP function, 2 nodes x 1 process vs torchrun 2 processes, call to first step "
              f"| {dh * 1000:.0f} ms | {do * 1000:.0f} ms | {do - dh:+.3f} s | {do / dh:.2f} |")
        print(f"rounds: {a.rounds}; by hand {[round(x, 2) for x in hand]}; "
              f"TrainerClient {[round(x, 2) for x in ours]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
