#!/usr/bin/env python3
"""Small but real multi-worker TensorFlow training (MultiWorkerMirroredStrategy).

Trains a Keras MLP on scikit-learn's bundled digits dataset (8x8 images, 10
classes; no download).  The cluster comes from TF_CONFIG, which the Kubeflow
training operator (or trainctl's local runner) injects into a TFJob's replicas:

  {"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": i},
   "environment": "cloud"}

tf.distribute.MultiWorkerMirroredStrategy reads it, starts this task's gRPC
server on its own address and all-reduces the gradients of every step (ring
collectives), so all workers apply the same updates.  The input pipeline is
sharded by the strategy (AutoShardPolicy.DATA); every worker runs the same
number of steps.  Without TF_CONFIG it runs as a single worker.

Every worker prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "params_sha256": ..}

rank is the task index among the workers (a chief, if any, counts first);
params_sha256 is the sha256 of all weights after training, the same on every
worker.  No worker waits forever for a peer: collectives time out after
--timeout-seconds and the whole run is bounded by twice that (exit 3, or
killed by SIGALRM if TensorFlow is still waiting for a peer to start).
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time

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
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64, help="global batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument(
        "--timeout-seconds",
        type=float,
        default=float(os.environ.get("TF_TIMEOUT_SECONDS", "120")),
        help="timeout of each collective (default 120 s, env TF_TIMEOUT_SECONDS); the "
        "whole run is bounded by twice that",
    )
    return p.parse_args()


def cluster_from_env():
    """Return (rank, world_size) from TF_CONFIG (or exit 2 if it is unusable)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0, 1
    try:
        cfg = json.loads(raw)
        cluster, task = cfg["cluster"], cfg["task"]
        ttype, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        die(f"TF_CONFIG is not a usable cluster spec ({e}): {raw}")
    members = list(cluster.get("chief", [])) + list(cluster.get("worker", []))
    if ttype not in ("chief", "worker") or not members:
        die(f"MultiWorkerMirroredStrategy needs chief/worker tasks, got task {task}")
    rank = index if ttype == "chief" else len(cluster.get("chief", [])) + index
    return rank, len(members)


def start_watchdog(rank, seconds):
    def expire():
        emit(f"train.py: error: [rank {rank}] not done after {seconds:g}s "
             "(a worker is missing, died or hangs); exiting", sys.stderr)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def main():
    args = parse_args()
    t0 = time.time()
    rank, world_size = cluster_from_env()
    watchdog = start_watchdog(rank, 2 * args.timeout_seconds)
    # The strategy's start-up waits for every worker inside TensorFlow's C++ code while
    # holding the GIL (and TF keeps running on SIGTERM), so the watchdog thread cannot fire
    # there: SIGALRM, left at its default action, ends the process whatever it is doing.
    signal.alarm(int(2 * args.timeout_seconds) + 5)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's C++ INFO/WARNING lines
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
    import numpy as np
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    tf.get_logger().setLevel("ERROR")
    tf.keras.utils.set_random_seed(SEED)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    tf.config.threading.set_intra_op_parallelism_threads(1)

    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING,
        timeout_seconds=args.timeout_seconds,
    )
    # Reads TF_CONFIG and blocks until every worker's server is up.
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    if strategy.num_replicas_in_sync != world_size:
        die(f"strategy has {strategy.num_replicas_in_sync} replicas, TF_CONFIG {world_size}", 1)
    log(rank, f"joined num_replicas_in_sync={strategy.num_replicas_in_sync} "
              f"pid={os.getpid()} tensorflow={tf.__version__}")

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=297, random_state=SEED, stratify=y)

    steps_per_epoch = len(y_tr) // args.batch_size
    ds = (
        tf.data.Dataset.from_tensor_slices((x_tr, y_tr))
        .shuffle(len(y_tr), seed=SEED, reshuffle_each_iteration=True)
        .repeat()
        .batch(args.batch_size, drop_remainder=True)
    )
    opts = tf.data.Options()
    # Each worker takes every world_size-th element of every batch; all run the same steps.
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = ds.with_options(opts)

    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(64,)),
            tf.keras.layers.Dense(args.hidden, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(
            optimizer=tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=0.9),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            log(rank, f"epoch {epoch + 1}/{args.epochs} loss {logs['loss']:.4f} "
                      f"accuracy {logs['accuracy']:.4f}")

    model.fit(ds, epochs=args.epochs, steps_per_epoch=steps_per_epoch, verbose=0,
              callbacks=[Progress()])

    weights = model.get_weights()
    logits = np.asarray(model(x_te, training=False))
    acc = float((logits.argmax(axis=1) == y_te).mean())
    h = hashlib.sha256()
    for w in weights:
        h.update(np.ascontiguousarray(w).tobytes())
    digest = h.hexdigest()

    watchdog.cancel()
    signal.alarm(0)
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
