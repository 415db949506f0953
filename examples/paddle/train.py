#!/usr/bin/env python3
"""Small but real collective data-parallel training with PaddlePaddle on CPU (gloo).

Started by `python3 -m paddle.distributed.launch train.py` in every replica of a PaddleJob:
the launch module reads PADDLE_MASTER, PADDLE_NNODES and PADDLE_JOB_ID (what the Kubeflow
operator, or trainctl's local runner, injects), rendezvous through the master and starts this
script with PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, PADDLE_CURRENT_ENDPOINT and
PADDLE_TRAINER_ENDPOINTS. Each rank trains a softmax regression on its shard of scikit-learn's
digits (rows RANK::WORLD) and all-reduces the gradients every step, so all ranks hold the same
parameters. Every rank prints one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "params_sha256": ..}
"""

import argparse
import hashlib
import json
import sys

import numpy as np
import paddle
import paddle.distributed as dist
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 0


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.5)
    args = p.parse_args()

    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype("float32")
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.25, random_state=SEED, stratify=y)
    xs = paddle.to_tensor(x_train[rank::world])
    ys = paddle.to_tensor(y_train[rank::world].astype("int64"))
    n_local = len(x_train[rank::world])
    n_total = len(x_train)

    paddle.seed(SEED)
    model = paddle.nn.Linear(64, 10)
    for param in model.parameters():  # same start everywhere: rank 0's
        dist.broadcast(param, src=0)
    opt = paddle.optimizer.SGD(learning_rate=args.lr, parameters=model.parameters())
    for epoch in range(1, args.epochs + 1):
        # Sum of per-example losses on this shard; the all-reduced gradient / n_total is the
        # gradient of the mean loss over the whole training split.
        loss = paddle.nn.functional.cross_entropy(model(xs), ys, reduction="sum")
        loss.backward()
        for param in model.parameters():
            dist.all_reduce(param.grad)
            param.grad.set_value(param.grad / n_total)
        opt.step()
        opt.clear_grad()
        if rank == 0 and (epoch == 1 or epoch % 50 == 0):
            emit(f"[rank {rank}] epoch {epoch} local loss {float(loss) / n_local:.4f}")

    with paddle.no_grad():
        pred = model(paddle.to_tensor(x_test)).numpy().argmax(axis=1)
    accuracy = float((pred == y_test).mean())
    flat = np.concatenate([p.numpy().ravel() for p in model.parameters()])
    emit("RESULT " + json.dumps({"rank": rank, "world_size": world,
                                 "test_accuracy": round(accuracy, 4),
                                 "params_sha256": hashlib.sha256(flat.tobytes()).hexdigest()}))


if __name__ == "__main__":
    main()
