#!/usr/bin/env python3
"""Small but real data-parallel training with MPI (mpi4py + numpy).

Trains a multinomial logistic regression (softmax) on scikit-learn's bundled
digits dataset (8x8 images, 10 classes; no download).  mpirun starts the ranks
(on Kubernetes in the worker pods through kubexec.sh, with trainctl run on this
machine); each rank takes its shard of the training split (rows RANK::SIZE),
computes the gradient of its shard and the gradients are summed with
MPI Allreduce every step, so all ranks apply the same update and hold the same
parameters.

Every rank prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "host": .., "test_accuracy": .., "params_sha256": ..}

params_sha256 is the sha256 of the final weights; it is the same on every rank.

--fail-rank R makes rank R exit with code 3 after the first step (for tests):
mpirun then aborts the other ranks and exits non-zero.
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
from mpi4py import MPI
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=200, help="full-batch gradient steps")
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--l2", type=float, default=1e-4)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 3 (tests)")
    return p.parse_args()


def main():
    args = parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=SEED, stratify=y)
    x_shard, y_shard = x_train[rank::size], y_train[rank::size]
    n_total = comm.allreduce(len(x_shard), op=MPI.SUM)
    classes = 10
    onehot = np.eye(classes)[y_shard]

    # Same initial parameters everywhere: rank 0's, broadcast.
    w = np.random.default_rng(SEED).normal(0, 0.01, (x.shape[1], classes)) if rank == 0 else None
    w = comm.bcast(w, root=0)
    b = np.zeros(classes)

    for epoch in range(1, args.epochs + 1):
        logits = x_shard @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        err = p - onehot
        local = np.concatenate([(x_shard.T @ err).ravel(), err.sum(axis=0),
                                [-np.log(p[np.arange(len(y_shard)), y_shard] + 1e-12).sum()]])
        total = np.empty_like(local)
        comm.Allreduce(local, total, op=MPI.SUM)
        gw = total[:w.size].reshape(w.shape) / n_total + args.l2 * w
        gb = total[w.size:w.size + classes] / n_total
        w -= args.lr * gw
        b -= args.lr * gb
        if epoch == 1 and rank == args.fail_rank:
            emit(f"[rank {rank}] failing on purpose (--fail-rank)")
            os._exit(3)  # no MPI_Finalize: mpirun sees the rank die and aborts the rest
        if rank == 0 and (epoch % args.log_every == 0 or epoch == 1):
            emit(f"[rank {rank}] epoch {epoch} loss {total[-1] / n_total:.4f}")

    accuracy = float((np.argmax(x_test @ w + b, axis=1) == y_test).mean())
    digest = hashlib.sha256(np.concatenate([w.ravel(), b]).tobytes()).hexdigest()
    emit("RESULT " + json.dumps({"rank": rank, "world_size": size,
                                 "host": MPI.Get_processor_name(),
                                 "test_accuracy": round(accuracy, 4),
                                 "params_sha256": digest}))


if __name__ == "__main__":
    main()
