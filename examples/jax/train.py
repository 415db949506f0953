#!/usr/bin/env python3
"""Small but real multi-process JAX training on CPU (jax.distributed + gloo).

Trains an MLP on scikit-learn's bundled digits dataset (8x8 images, 10
classes; no download).  The env is what the Kubeflow training operator (or
trainctl's local runner) injects into a JAXJob's Worker replicas:

  COORDINATOR_ADDRESS, COORDINATOR_PORT  address of worker 0, which hosts the
                                         coordination service (jaxjob-port,
                                         6666 by default; a free port locally)
  NUM_PROCESSES                          number of Worker replicas
  PROCESS_ID                             this replica's index

Every process calls jax.distributed.initialize() with them, selects the gloo
CPU collectives (jax_cpu_collectives_implementation="gloo"), and owns one CPU
device.  The training step is a jax.pmap over the local device whose gradients
are averaged with lax.pmean over *all* processes' devices, so each process
computes gradients on its shard (rows PROCESS_ID::NUM_PROCESSES) and all of
them apply the same update.  Without those variables it runs as a single
process.

Every process prints progress lines and, at the end, exactly one line

    RESULT {"rank": .., "world_size": .., "test_accuracy": .., "params_sha256": ..}

params_sha256 is the sha256 of all parameters' bytes after training; it is the
same on every process.  No process waits forever for a peer: the whole run is
bounded by --timeout-seconds (exit 3), and jax.distributed.initialize by its
own initialization_timeout.
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
    p.add_argument("--steps", type=int, default=300, help="full-batch gradient steps")
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--log-every", type=int, default=50, help="progress line every N steps")
    p.add_argument(
        "--timeout-seconds",
        type=float,
        default=float(os.environ.get("JAX_TIMEOUT_SECONDS", "300")),
        help="bound on the whole run (default 300 s, env JAX_TIMEOUT_SECONDS): a process "
        "whose peer never comes, died or hangs exits 3 instead of blocking forever",
    )
    return p.parse_args()


def cluster_from_env():
    """Return (process_id, num_processes, coordinator 'host:port' or None)."""
    env = os.environ
    keys = ("COORDINATOR_ADDRESS", "COORDINATOR_PORT", "NUM_PROCESSES", "PROCESS_ID")
    if not any(k in env for k in keys):
        return 0, 1, None
    missing = [k for k in keys if not env.get(k)]
    if missing:
        die(f"incomplete cluster env, missing {', '.join(missing)}")
    try:
        pid, n, port = int(env["PROCESS_ID"]), int(env["NUM_PROCESSES"]), int(env["COORDINATOR_PORT"])
    except ValueError:
        die("PROCESS_ID, NUM_PROCESSES and COORDINATOR_PORT must be integers")
    if n < 1 or not 0 <= pid < n:
        die(f"need NUM_PROCESSES >= 1 and 0 <= PROCESS_ID < NUM_PROCESSES, got {pid}/{n}")
    return pid, n, f"{env['COORDINATOR_ADDRESS']}:{port}"


def start_watchdog(rank, seconds):
    """Hard-exit if the run takes longer than `seconds` (a collective blocked on a
    dead or missing peer releases the GIL, so this timer thread still runs)."""
    def expire():
        emit(f"train.py: error: [rank {rank}] not done after {seconds:g}s "
             "(a process is missing, died or hangs); exiting", sys.stderr)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def main():
    args = parse_args()
    t0 = time.time()
    rank, world_size, coordinator = cluster_from_env()
    watchdog = start_watchdog(rank, args.timeout_seconds)

    # One CPU device per process; must be set before jax creates its backend.
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    import jax
    import jax.numpy as jnp
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    jax.config.update("jax_platforms", "cpu")
    if world_size > 1:
        # Cross-process collectives on CPU (jax >= 0.4.23 ships gloo in jaxlib).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=world_size,
            process_id=rank,
            initialization_timeout=int(args.timeout_seconds),
        )
        if (jax.process_index(), jax.process_count()) != (rank, world_size):
            die(f"jax says process {jax.process_index()}/{jax.process_count()}, "
                f"env says {rank}/{world_size}", 1)
    log(rank, f"joined num_processes={jax.process_count()} coordinator={coordinator} "
              f"devices={jax.device_count()} local={jax.local_device_count()} "
              f"pid={os.getpid()} jax={jax.__version__}")

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=297, random_state=SEED, stratify=y)
    # This process's shard; each shard is padded to the same length with
    # zero-weight rows so that every process runs the same program.
    shard_len = -(-len(y_tr) // world_size)
    xs, ys = x_tr[rank::world_size], y_tr[rank::world_size]
    ws = np.ones(len(ys), np.float32)
    pad = shard_len - len(ys)
    xs = np.concatenate([xs, np.zeros((pad, xs.shape[1]), np.float32)])
    ys = np.concatenate([ys, np.zeros(pad, np.int32)])
    ws = np.concatenate([ws, np.zeros(pad, np.float32)])
    n_total = float(len(y_tr))

    # Same key on every process: identical initial parameters.
    k1, k2 = jax.random.split(jax.random.PRNGKey(SEED))
    params = {
        "w1": jax.random.normal(k1, (64, args.hidden)) * np.sqrt(2.0 / 64),
        "b1": jnp.zeros(args.hidden),
        "w2": jax.random.normal(k2, (args.hidden, 10)) * np.sqrt(1.0 / args.hidden),
        "b2": jnp.zeros(10),
    }

    def logits_fn(p, xb):
        return jax.nn.relu(xb @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

    def loss_fn(p, xb, yb, wb):
        # Sum of this shard's losses over the *global* count, so that the psum
        # of the shard gradients is the gradient of the mean loss over all rows.
        logp = jax.nn.log_softmax(logits_fn(p, xb))
        nll = -jnp.take_along_axis(logp, yb[:, None], axis=1)[:, 0]
        return jnp.sum(nll * wb) / n_total

    def step(p, xb, yb, wb):
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb, wb)
        grads = jax.lax.psum(grads, "procs")  # all-reduce across every process
        loss = jax.lax.psum(loss, "procs")
        p = jax.tree_util.tree_map(lambda a, g: a - args.lr * g, p, grads)
        return p, loss

    pstep = jax.pmap(step, axis_name="procs")
    # Leading axis = this process's local devices (one).
    ndev = jax.local_device_count()
    rep = jax.tree_util.tree_map(lambda a: jnp.stack([a] * ndev), params)
    xb, yb, wb = (np.stack([a] * ndev) for a in (xs, ys, ws))
    if ndev != 1:
        die(f"expected one local device, got {ndev}", 1)

    log(rank, f"training on {int(ws.sum())} rows of {int(n_total)} ({args.steps} steps)")
    for s in range(1, args.steps + 1):
        rep, loss = pstep(rep, xb, yb, wb)
        if s % args.log_every == 0 or s == args.steps:
            log(rank, f"step {s}/{args.steps} global train loss {float(loss[0]):.4f}")

    final = jax.tree_util.tree_map(lambda a: np.asarray(a[0]), rep)
    acc = float((np.asarray(logits_fn(final, x_te)).argmax(axis=1) == y_te).mean())
    h = hashlib.sha256()
    for k in sorted(final):
        h.update(np.ascontiguousarray(final[k]).tobytes())
    digest = h.hexdigest()

    if world_size > 1:
        jax.distributed.shutdown()  # waits for every process (a barrier)
    watchdog.cancel()
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
