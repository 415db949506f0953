#!/usr/bin/env python3
"""A real DDP training (gloo, CPU) on scikit-learn's digits that checkpoints and resumes, for
the gang-restart tests: rank 0 saves model + optimizer + step every --every steps into
--checkpoints (written to a temporary name, then renamed: a checkpoint is complete or absent);
every rank resumes from the newest one. With --die-at S, rank --die-rank exits with code 1 at
step S of the first attempt (TRAINCTL_RESTART_ATTEMPT absent or 0), as a crashed rank would.

Prints "attempt A rank R resumed from step S" once and, at the end, "RESULT {json}" with the
sha256 of the parameters (equal on every rank: DDP keeps them in lock-step).
"""
import argparse
import datetime
import gc
import glob
import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.nn.parallel import DistributedDataParallel as DDP


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def last_checkpoint(folder):
    found = sorted(glob.glob(os.path.join(folder, "step-*.pt")),
                   key=lambda p: int(os.path.basename(p)[5:-3]))
    return found[-1] if found else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--checkpoints", required=True)
    p.add_argument("--die-at", type=int, default=-1)
    p.add_argument("--die-rank", type=int, default=1)
    p.add_argument("--timeout-seconds", type=float, default=20)
    args = p.parse_args()
    attempt = int(os.environ.get("TRAINCTL_RESTART_ATTEMPT", "0"))
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout_seconds))
    rank = dist.get_rank()
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    model = DDP(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = 0
    checkpoint = last_checkpoint(args.checkpoints)
    if checkpoint:
        state = torch.load(checkpoint)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    emit(f"attempt {attempt} rank {rank} resumed from step {start}")
    world = dist.get_world_size()
    for step in range(start, args.steps):
        if step == args.die_at and rank == args.die_rank and attempt == 0:
            emit(f"rank {rank} dies at step {step}")
            os._exit(1)
        batch = torch.arange(step * 32, step * 32 + 32) % len(x)
        batch = batch[rank::world]
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()
        if (step + 1) % args.every == 0:
            emit(f"rank {rank} step {step + 1} loss {loss.item():.4f}")
            if rank == 0:
                path = os.path.join(args.checkpoints, f"step-{step + 1}.pt")
                torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step + 1}, path + ".tmp")
                os.replace(path + ".tmp", path)
            dist.barrier()
    digest = hashlib.sha256(b"".join(t.detach().numpy().tobytes()
                                     for t in model.module.parameters())).hexdigest()
    emit("RESULT " + json.dumps({"rank": rank, "attempt": attempt, "resumed_from": start,
                                 "params_sha256": digest}))
    del model, optimizer  # DDP's reducer before its group (torch 1.13's teardown deadlock)
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
