#!/usr/bin/env python3
"""Small but real TensorFlow parameter-server training (ParameterServerStrategy).

Trains a Keras MLP on scikit-learn's bundled digits dataset (8x8 images, 10
classes; no download).  The cluster comes from TF_CONFIG, which the Kubeflow
training operator (or trainctl's local runner) injects into a TFJob's replicas:

  {"cluster": {"chief": [..], "ps": [..], "worker": [..]},
   "task": {"type": "chief"|"ps"|"worker", "index": i}, "environment": "cloud"}

- ps and worker tasks only run a tf.distribute.Server on their own address;
  they hold the variables (ps) and execute the steps the chief sends (worker).
- the chief is the coordinator: tf.distribute.ParameterServerStrategy +
  Keras model.fit (which uses a ClusterCoordinator) schedules the training
  steps on the workers, asynchronously; the variables live on the ps.

A ps/worker server has nothing to return on its own and in TensorFlow's design
runs until it is killed.  Here it exits 0 once the chief, having been seen
listening, has gone away (the job is over), and exits 3 if the chief never
shows up within --timeout-seconds.

The chief prints progress lines and, at the end, exactly one line

    RESULT {"rank": 0, "world_size": .., "role": "chief", "test_accuracy": .., "params_sha256": ..}

(world_size counts chief + workers; the ps and worker tasks print no RESULT
line: in parameter-server training there is one copy of the weights, on the ps).
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time

SEED = 0


def emit(line, stream=sys.stdout):
    stream.write(line + "\n")
    stream.flush()


def die(msg, code=2):
    emit(f"train_ps.py: error: {msg}", sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="batch size of each step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument(
        "--timeout-seconds",
        type=float,
        default=float(os.environ.get("TF_TIMEOUT_SECONDS", "300")),
        help="bound on the chief's whole run and on a server's wait for the chief to "
        "appear (default 300 s, env TF_TIMEOUT_SECONDS); exit 3 when exceeded",
    )
    return p.parse_args()


def load_tf_config():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        die("TF_CONFIG is not set (parameter-server training needs a cluster)")
    try:
        cfg = json.loads(raw)
        cluster, task = cfg["cluster"], cfg["task"]
        ttype, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        die(f"TF_CONFIG is not a usable cluster spec ({e}): {raw}")
    for role in ("chief", "ps", "worker"):
        if not cluster.get(role):
            die(f"TF_CONFIG has no {role} task (need Chief, PS and Worker replicas): {raw}")
    return cluster, ttype, index


def watchdog(tag, seconds):
    def expire():
        emit(f"train_ps.py: error: [{tag}] not done after {seconds:g}s; exiting", sys.stderr)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def listening(hostport):
    host, port = hostport.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def run_server(tf, resolver, cluster, ttype, index, timeout):
    tag = f"{ttype} {index}"
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=ttype, task_index=index,
        protocol=resolver.rpc_layer or "grpc", start=True,
    )
    emit(f"[{tag}] server listening at {cluster[ttype][index]} ({server.target}), pid={os.getpid()}")
    chief = cluster["chief"][0]
    timer = watchdog(f"{tag} waiting for the chief at {chief}", timeout)
    while not listening(chief):
        time.sleep(0.5)
    timer.cancel()
    emit(f"[{tag}] chief is up at {chief}; serving until it is gone")
    misses = 0
    while misses < 3:
        time.sleep(1)
        misses = 0 if listening(chief) else misses + 1
    emit(f"[{tag}] chief is gone; exiting")
    # server.join() would block forever; the server has no clean stop.
    os._exit(0)


def run_chief(tf, resolver, cluster, args):
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    t0 = time.time()
    timer = watchdog("chief", args.timeout_seconds)
    # Connecting to the cluster blocks in TensorFlow's C++ code holding the GIL, where the
    # watchdog thread cannot run: SIGALRM (default action) bounds it regardless.
    signal.alarm(int(args.timeout_seconds) + 5)
    world_size = len(cluster["chief"]) + len(cluster["worker"])
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    emit(f"[chief] coordinating {len(cluster['worker'])} worker(s) and {len(cluster['ps'])} ps "
         f"pid={os.getpid()} tensorflow={tf.__version__}")

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=297, random_state=SEED, stratify=y)

    def dataset_fn(input_context):
        # Runs on each worker: a shuffled, repeated stream of the training split.
        ds = tf.data.Dataset.from_tensor_slices((x_tr, y_tr))
        ds = ds.shuffle(len(y_tr), seed=SEED + input_context.input_pipeline_id).repeat()
        return ds.batch(args.batch_size, drop_remainder=True).prefetch(2)

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
            steps_per_execution=10,
        )

    class Progress(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs = logs or {}
            emit(f"[chief] epoch {epoch + 1}/{args.epochs} loss {float(logs.get('loss', -1)):.4f}")

    steps = len(y_tr) // args.batch_size
    model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs,
              steps_per_epoch=steps, verbose=0, callbacks=[Progress()])

    weights = model.get_weights()  # read from the ps
    h = hashlib.sha256()
    for w in weights:
        h.update(np.ascontiguousarray(w).tobytes())
    w1, b1, w2, b2 = weights
    logits = np.maximum(x_te @ w1 + b1, 0) @ w2 + b2
    acc = float((logits.argmax(axis=1) == y_te).mean())
    timer.cancel()
    signal.alarm(0)
    emit(f"[chief] done in {time.time() - t0:.2f}s")
    result = {
        "rank": 0,
        "world_size": world_size,
        "role": "chief",
        "test_accuracy": round(acc, 4),
        "params_sha256": h.hexdigest(),
    }
    emit("RESULT " + json.dumps(result, sort_keys=True))
    # Skip interpreter teardown (the coordinator's threads may still talk to the
    # workers); the servers notice the chief is gone and exit.
    os._exit(0)


def main():
    args = parse_args()
    cluster, ttype, index = load_tf_config()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    tf.keras.utils.set_random_seed(SEED)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if ttype in ("ps", "worker"):
        tf.config.threading.set_intra_op_parallelism_threads(1)
        run_server(tf, resolver, cluster, ttype, index, args.timeout_seconds)
    elif ttype == "chief":
        run_chief(tf, resolver, cluster, args)
    else:
        die(f"unexpected task type {ttype!r} (expected chief, ps or worker)")


if __name__ == "__main__":
    sys.exit(main())
