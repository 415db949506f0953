#!/usr/bin/env python3
"""Data-parallel MXNet training with the parameter-server kvstore (dist_sync) on CPU.

Trains a small MLP (64 -> 64 ReLU -> 10) on scikit-learn's bundled digits (8x8 images,
10 classes; no download). Every replica of the MXJob runs this same file; the role comes from
the env the Kubeflow training operator (or trainctl's local runner) injects:

  DMLC_ROLE            scheduler | server | worker
  DMLC_PS_ROOT_URI     address of the Scheduler replica (ps-lite's rendezvous)
  DMLC_PS_ROOT_PORT    its port (mxjob-port, 9091 unless declared; a free port locally)
  DMLC_NUM_SERVER      number of Server replicas
  DMLC_NUM_WORKER      number of Worker replicas
  DMLC_USE_KUBERNETES  1: the scheduler binds 0.0.0.0

MXNet reads them itself: `import mxnet` in a scheduler or server process runs ps-lite's
scheduler / the kvstore server and exits when the workers are done, so the rest of this file
only runs in the workers. A worker creates the kvstore `dist_sync`, trains on its shard of the
training rows (rows rank::num_workers) and pushes its gradients through gluon.Trainer; the
server sums the gradients of all workers for a step, applies SGD once and the workers pull the
new weights, so all workers hold the same parameters after every step.

Every worker prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "params_sha256": ..}

params_sha256 is the sha256 of all parameters' bytes after training (the same on every
worker). No process waits forever: the whole run is bounded by --timeout-seconds (exit 3).

MXNet 1.9.1 (the last release; Apache retired the project in 2023) still uses `numpy.bool`,
which numpy 1.24 removed; `import mxnet` fails with AttributeError unless the alias is put
back, which is what the first lines of main() do (numpy.bool was the builtin bool).
"""

import argparse
import hashlib
import json
import os
import sys
import threading
import time

SEED = 0


def emit(line, stream=sys.stdout):
    # One write() per line, so that lines of processes sharing a stream do not interleave.
    stream.write(line + "\n")
    stream.flush()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="rows per worker per step")
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--timeout-seconds", type=float,
                   default=float(os.environ.get("MXNET_TIMEOUT_SECONDS", "300")),
                   help="bound on the whole run (default 300 s, env MXNET_TIMEOUT_SECONDS): "
                   "a process whose peer never comes, died or hangs exits 3")
    return p.parse_args()


def start_watchdog(role, seconds):
    """Hard-exit after `seconds`: ps-lite waits for its peers in C++ with the GIL released,
    so this timer thread still runs."""
    def expire():
        emit(f"train.py: error: [{role}] not done after {seconds:g}s "
             "(a replica is missing, died or hangs); exiting", sys.stderr)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def main():
    args = parse_args()
    t0 = time.time()
    role = os.environ.get("DMLC_ROLE", "worker")
    watchdog = start_watchdog(role, args.timeout_seconds)
    # Few threads per process: four processes share a small machine.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")
    # On one machine (trainctl's local runner gives 127.0.0.1 for the scheduler) every node
    # is reachable on loopback; without this ps-lite announces the first non-loopback
    # interface's address. On Kubernetes (pod IPs) it is left alone.
    if os.environ.get("DMLC_PS_ROOT_URI", "").startswith("127.") and "DMLC_NODE_HOST" not in os.environ:
        os.environ["DMLC_NODE_HOST"] = "127.0.0.1"

    import numpy as np
    if "bool" not in vars(np):  # (hasattr() would trigger numpy's FutureWarning)
        np.bool = bool  # for MXNet 1.9.1 with numpy >= 1.24, see the docstring

    if role in ("scheduler", "server"):
        emit(f"[{role}] starting ps-lite {role} (root "
             f"{os.environ.get('DMLC_PS_ROOT_URI')}:{os.environ.get('DMLC_PS_ROOT_PORT')}, "
             f"{os.environ.get('DMLC_NUM_SERVER')} server(s), "
             f"{os.environ.get('DMLC_NUM_WORKER')} worker(s))")
    import mxnet as mx  # scheduler and server: serve here, then sys.exit() when workers finish
    from mxnet import autograd, gluon
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    mx.random.seed(SEED)
    np.random.seed(SEED)
    kv = mx.kv.create("dist_sync" if "DMLC_ROLE" in os.environ else "local")
    rank, world_size = kv.rank, kv.num_workers
    tag = f"[worker {rank}]"
    emit(f"{tag} joined kvstore={kv.type} num_workers={world_size} "
         f"pid={os.getpid()} mxnet={mx.__version__}")

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=297, random_state=SEED, stratify=y)
    # This worker's shard, cut to the same number of full batches on every worker: dist_sync
    # waits for one push from every worker per step.
    steps_per_epoch = len(y_tr) // world_size // args.batch_size
    n = steps_per_epoch * args.batch_size
    xs, ys = x_tr[rank::world_size][:n], y_tr[rank::world_size][:n]

    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(args.hidden, activation="relu", in_units=64),
            gluon.nn.Dense(10, in_units=args.hidden))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize()
    # The Trainer initialises the kvstore keys with worker 0's initial weights (the others
    # pull them), pushes gradients and pulls the server-updated weights on every step.
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr},
                            kvstore=kv, update_on_kvstore=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    emit(f"{tag} training on {n} of {len(y_tr)} rows, {steps_per_epoch} steps/epoch, "
         f"{args.epochs} epochs")
    rng = np.random.RandomState(SEED + rank)
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n)
        total = 0.0
        for s in range(steps_per_epoch):
            idx = order[s * args.batch_size:(s + 1) * args.batch_size]
            xb, yb = mx.nd.array(xs[idx]), mx.nd.array(ys[idx])
            with autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            # The server sums the workers' gradients: scale by the global batch so that the
            # update is SGD on the mean loss over all workers' rows.
            trainer.step(args.batch_size * world_size)
            total += float(loss.mean().asscalar())
        if epoch % 5 == 0 or epoch == args.epochs:
            emit(f"{tag} epoch {epoch}/{args.epochs} shard train loss {total / steps_per_epoch:.4f}")

    params = sorted(net.collect_params().items())
    values = [p.data().asnumpy() for _, p in params]
    acc = float((net(mx.nd.array(x_te)).asnumpy().argmax(axis=1) == y_te).mean())
    h = hashlib.sha256()
    for v in values:
        h.update(np.ascontiguousarray(v).tobytes())
    result = {"rank": rank, "world_size": world_size, "num_servers": int(os.environ.get("DMLC_NUM_SERVER", "0")),
              "kvstore": kv.type, "mxnet": mx.__version__, "test_accuracy": round(acc, 4),
              "params_sha256": h.hexdigest(), "seconds": round(time.time() - t0, 1)}
    emit("RESULT " + json.dumps(result, sort_keys=True))
    watchdog.cancel()
    # Leaving main() lets MXNet finalise the kvstore (a barrier with the other workers, after
    # which the server and the scheduler exit).


if __name__ == "__main__":
    main()
