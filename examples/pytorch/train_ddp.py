#!/usr/bin/env python3
"""Small but real DistributedDataParallel training on CPU (gloo).

Trains an MLP on scikit-learn's bundled digits dataset (8x8 images, 10
classes; no download).  Rendezvous is env:// (MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE), which is what the Kubeflow training operator injects into a
PyTorchJob's replicas and also what torchrun sets for the processes it starts.
Without those variables it runs as a world of 1.

Every rank prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "params_sha256": ..}

params_sha256 is the sha256 of all parameters' bytes after training; DDP keeps
the replicas in lock-step, so it is the same on every rank.
"""

import argparse
import datetime
import gc
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

SEED = 0


def emit(line):
    # One write() per line: ranks started by torchrun share one stdout, and with
    # PYTHONUNBUFFERED print() issues the text and the "\n" as two writes, so
    # lines of different ranks could interleave.
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def log(rank, msg):
    emit(f"[rank {rank}] {msg}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per-rank batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument(
        "--timeout-seconds",
        type=float,
        default=float(os.environ.get("DDP_TIMEOUT_SECONDS", "120")),
        help="rendezvous and collective timeout (default 120 s, env DDP_TIMEOUT_SECONDS); "
        "bounds how long a rank waits for a peer that never comes or died",
    )
    return p.parse_args()


def init_distributed(timeout_s):
    """Join the process group; returns (rank, world_size)."""
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        # Not launched by an operator or torchrun: a world of one, no network.
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        return 0, 1
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    # env:// reads MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE.
    dist.init_process_group(
        backend="gloo",
        init_method="env://",
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    assert dist.get_rank() == rank and dist.get_world_size() == world_size
    return rank, world_size


def load_data():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixel values are 0..16
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=297, random_state=SEED, stratify=y
    )
    return (
        TensorDataset(torch.from_numpy(x_tr), torch.from_numpy(y_tr)),
        TensorDataset(torch.from_numpy(x_te), torch.from_numpy(y_te)),
    )


def params_digest(model):
    h = hashlib.sha256()
    for _, p in sorted(model.state_dict().items()):
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    args = parse_args()
    t0 = time.time()
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    np.random.seed(SEED)

    rank, world_size = init_distributed(args.timeout_seconds)
    log(
        rank,
        f"joined world_size={world_size} master={os.environ.get('MASTER_ADDR')}:"
        f"{os.environ.get('MASTER_PORT')} local_rank={os.environ.get('LOCAL_RANK', '-')} "
        f"pid={os.getpid()} torch={torch.__version__}",
    )

    train_ds, test_ds = load_data()
    sampler = DistributedSampler(
        train_ds, num_replicas=world_size, rank=rank, shuffle=True, seed=SEED, drop_last=False
    )
    loader = DataLoader(train_ds, batch_size=args.batch_size, sampler=sampler)

    model = nn.Sequential(
        nn.Linear(64, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, 10),
    )
    ddp = DDP(model)  # broadcasts rank 0's initial parameters
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    first_step_file = os.environ.get("TRAIN_DDP_FIRST_STEP_FILE")
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        ddp.train()
        total, n = 0.0, 0
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(ddp(xb), yb)
            loss.backward()  # gradients are all-reduced (averaged) here
            opt.step()
            if first_step_file and rank == 0:  # bench/local_overhead.py --first-step
                with open(first_step_file, "w") as f:
                    f.write(repr(time.time()))
                first_step_file = None
            total += loss.item() * len(yb)
            n += len(yb)
        log(rank, f"epoch {epoch}/{args.epochs} loss {total / max(n, 1):.4f} samples {n}")

    model.eval()
    with torch.no_grad():
        x_te, y_te = test_ds.tensors
        acc = (model(x_te).argmax(dim=1) == y_te).float().mean().item()

    digest = params_digest(model)
    # DDP's reducer goes while the process group is still registered. Freed after
    # destroy_process_group (as main()'s locals are, at return), it frees the group itself and,
    # in torch 1.13, joins gloo's threads holding the GIL: a thread still freeing a tensor then
    # waits for the GIL forever (seen on the real node: the training done, the pod Running).
    del ddp, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    log(rank, f"done in {time.time() - t0:.2f}s")
    result = {
        "rank": rank,
        "world_size": world_size,
        "test_accuracy": round(acc, 4),
        "params_sha256": digest,
    }
    emit("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
