#!/usr/bin/env python3
"""Small but real distributed XGBoost training with xgboost's own Rabit tracker.

Trains a multi:softprob booster (hist) on scikit-learn's bundled digits dataset
(8x8 images, 10 classes; no download).  The env is what the Kubeflow training
operator (or trainctl's local runner) injects into an XGBoostJob's replicas:

  MASTER_ADDR, MASTER_PORT  address of the Master replica and its declared port
                            (9999 by default on Kubernetes, a free port locally)
  WORLD_SIZE                total number of replicas (Master + Workers)
  RANK                      0 for the Master, i+1 for Worker i

Rank 0 starts xgboost.tracker.RabitTracker on MASTER_PORT in a background
thread; then every rank, rank 0 included, joins it with xgboost.collective.init
(DMLC_TRACKER_URI=MASTER_ADDR, DMLC_TRACKER_PORT=MASTER_PORT, DMLC_TASK_ID from
RANK) and trains on its shard of the training split (rows RANK::WORLD_SIZE).
Histograms are all-reduced every round, so all ranks build the same trees.
Without WORLD_SIZE and RANK it runs as a world of 1 with no tracker.

Every rank prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "booster_sha256": ..}

booster_sha256 is the sha256 of the booster saved as JSON; it is the same on
every rank.  No rank waits forever for a peer that fails: exit code 1 when a
collective fails (a peer died: at once; a peer hangs: after --timeout-seconds),
3 when a rank never joins the tracker (after --timeout-seconds), 2 on bad env.
"""

import argparse
import contextlib
import hashlib
import ipaddress
import json
import os
import sys
import threading
import time

import xgboost as xgb
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from xgboost import collective
from xgboost.tracker import RabitTracker

SEED = 0


def emit(line, stream=sys.stdout):
    # One write() per line so that lines of different processes sharing a
    # stream cannot interleave.
    stream.write(line + "\n")
    stream.flush()


def log(rank, msg):
    emit(f"[rank {rank}] {msg}")


def die(msg, code=2):
    emit(f"train.py: error: {msg}", sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30, help="boosting rounds")
    p.add_argument("--max-depth", type=int, default=4)
    p.add_argument("--eta", type=float, default=0.3)
    p.add_argument("--nthread", type=int, default=1, help="threads per rank")
    p.add_argument("--log-every", type=int, default=5, help="progress line every N rounds")
    p.add_argument(
        "--timeout-seconds",
        type=float,
        default=float(os.environ.get("XGB_TIMEOUT_SECONDS", "300")),
        help="bound on joining the tracker, on each collective operation and on the "
        "final shutdown (default 300 s, env XGB_TIMEOUT_SECONDS): a rank that never "
        "comes or hangs makes the others exit non-zero instead of blocking forever",
    )
    return p.parse_args()


def cluster_from_env():
    """Return (rank, world_size, master_addr, master_port), or exit 2 on bad env."""
    env = os.environ
    if "WORLD_SIZE" not in env and "RANK" not in env:
        return 0, 1, None, None  # standalone: a world of one
    missing = [k for k in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT") if not env.get(k)]
    if missing:
        die(f"incomplete cluster env, missing {', '.join(missing)} "
            "(set all of MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, or none)")
    try:
        rank, world, port = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["MASTER_PORT"])
    except ValueError:
        die(f"RANK={env['RANK']!r} WORLD_SIZE={env['WORLD_SIZE']!r} "
            f"MASTER_PORT={env['MASTER_PORT']!r} must be integers")
    if world < 1 or not 0 <= rank < world:
        die(f"need WORLD_SIZE >= 1 and 0 <= RANK < WORLD_SIZE, got RANK={rank} WORLD_SIZE={world}")
    if not 0 < port < 65536:
        die(f"MASTER_PORT={port} is not a TCP port")
    return rank, world, env["MASTER_ADDR"], port


@contextlib.contextmanager
def deadline(rank, seconds, what):
    """Hard-exit this process if the block takes longer than `seconds`.

    The tracker handshake (and the tracker's accept loop) block in C / socket
    code with no timeout, so a rank that never shows up would hang all others.
    ctypes releases the GIL during those calls, so this timer thread still runs.
    """
    def expire():
        emit(f"train.py: error: [rank {rank}] {what}: not done after {seconds:g}s "
             "(a rank is missing, died or hangs); exiting", sys.stderr)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def load_shard(rank, world_size):
    digits = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(
        digits.data, digits.target, test_size=297, random_state=SEED, stratify=digits.target
    )
    # Each rank trains on every WORLD_SIZE-th row of the same fixed split.
    return x_tr[rank::world_size], y_tr[rank::world_size], x_te, y_te


class Progress(xgb.callback.TrainingCallback):
    """Print a progress line every few rounds (train mlogloss is all-reduced,
    so it is the loss over the whole training split, not just this shard)."""

    def __init__(self, rank, rounds, every):
        super().__init__()
        self.rank, self.rounds, self.every = rank, rounds, max(every, 1)

    def after_iteration(self, model, epoch, evals_log):
        k = epoch + 1
        if k % self.every == 0 or k == self.rounds:
            loss = evals_log["train"]["mlogloss"][-1]
            log(self.rank, f"round {k}/{self.rounds} train mlogloss {loss:.4f}")
        return False  # do not stop training


def train(args, rank, world_size):
    x, y, x_te, y_te = load_shard(rank, world_size)
    dtrain = xgb.DMatrix(x, label=y, nthread=args.nthread)
    params = {
        "objective": "multi:softprob",
        "num_class": 10,
        "tree_method": "hist",
        "max_depth": args.max_depth,
        "eta": args.eta,
        "eval_metric": "mlogloss",
        "nthread": args.nthread,
        "seed": SEED,
    }
    log(rank, f"training on {len(y)} rows ({args.rounds} rounds)")
    bst = xgb.train(
        params, dtrain, num_boost_round=args.rounds, evals=[(dtrain, "train")],
        verbose_eval=False, callbacks=[Progress(rank, args.rounds, args.log_every)],
    )
    # Prediction is local; every rank scores the same held-out test split.
    proba = bst.predict(xgb.DMatrix(x_te, nthread=args.nthread))
    acc = float((proba.argmax(axis=1) == y_te).mean())
    digest = hashlib.sha256(bytes(bst.save_raw("json"))).hexdigest()
    return acc, digest


def tracker_bind_address(addr):
    """Where rank 0's tracker listens: MASTER_ADDR if it is an IP (locally
    127.0.0.1); else all interfaces, as on Kubernetes MASTER_ADDR is the Master's
    service name, which need not resolve (to a local address) while it starts."""
    try:
        ipaddress.ip_address(addr)
        return addr
    except ValueError:
        return "0.0.0.0"


def train_distributed(args, rank, world_size, addr, port):
    timeout = args.timeout_seconds
    tracker = None
    if rank == 0:
        # sortby="task": ranks are handed out in DMLC_TASK_ID order (see below).
        bind = tracker_bind_address(addr)
        try:
            tracker = RabitTracker(host_ip=bind, n_workers=world_size, port=port, sortby="task")
        except OSError as e:
            die(f"[rank 0] cannot start the tracker on {bind}:{port}: {e}", 1)
        tracker.start(world_size)  # accept loop in a daemon thread
        log(rank, f"tracker listening on {bind}:{tracker.port} for {world_size} workers")

    comm_args = {
        "DMLC_TRACKER_URI": addr,  # every rank, rank 0 too, dials the Master's address
        "DMLC_TRACKER_PORT": port,
        # Zero-padded so that the tracker's string sort is numeric: rabit rank == RANK.
        "DMLC_TASK_ID": f"{rank:06d}",
        "rabit_world_size": world_size,
        # Workers may start before the Master's tracker listens; retry k sleeps 2k s,
        # so 10 attempts wait ~90 s in all.
        "DMLC_WORKER_CONNECT_RETRY": int(os.environ.get("DMLC_WORKER_CONNECT_RETRY", "10")),
        # A collective that waits longer than this for a peer fails ("Poll timeout").
        "rabit_timeout": True,
        "rabit_timeout_sec": max(1, int(timeout)),
    }
    # collective.init/finalize rather than CommunicatorContext: its __exit__
    # finalizes after an error too, and finalize() then dials a possibly dead
    # tracker with the same ~90 s of retries.  On error we exit without it.
    try:
        with deadline(rank, timeout, "joining the tracker"):
            collective.init(**comm_args)  # returns once all ranks have joined
        got = (collective.get_rank(), collective.get_world_size())
        if got != (rank, world_size):
            die(f"tracker assigned rank/world {got}, env says {(rank, world_size)}")
        log(rank, f"joined the tracker at {addr}:{port}")
        acc, digest = train(args, rank, world_size)
    except xgb.core.XGBoostError as e:
        # A peer died ("Allreduce failed") or hangs ("Poll timeout").
        die(f"[rank {rank}] collective failed: {str(e).splitlines()[0]}", 1)

    with deadline(rank, timeout, "shutting down"):
        collective.finalize()  # tells the tracker this rank is done
        if tracker is not None:
            tracker.join()  # the accept loop ends once every rank has finalized
            log(rank, "tracker finished")
    return acc, digest


def main():
    args = parse_args()
    t0 = time.time()
    rank, world_size, addr, port = cluster_from_env()
    log(rank, f"start world_size={world_size} master={addr}:{port} pid={os.getpid()} "
              f"xgboost={xgb.__version__}")

    if world_size == 1:
        acc, digest = train(args, rank, world_size)
    else:
        acc, digest = train_distributed(args, rank, world_size, addr, port)

    log(rank, f"done in {time.time() - t0:.2f}s")
    result = {
        "rank": rank,
        "world_size": world_size,
        "test_accuracy": round(acc, 4),
        "booster_sha256": digest,
    }
    emit("RESULT " + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
