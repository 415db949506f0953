"""Training functions the SDK end-to-end tests submit. Each imports what it needs inside (the
function's source is what travels), trains a real model on scikit-learn's bundled digits and
prints one `RESULT {json}` line per rank."""


def ddp_digits(params):
    import datetime
    import gc
    import json
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from sklearn.datasets import load_digits

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"])
    shard = slice(rank, None, world)
    for epoch in range(params["epochs"]):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[shard]), y[shard])
        loss.backward()
        opt.step()
        print(f"epoch {epoch} rank {rank} loss {loss.item():.4f}", flush=True)
    acc = (model(x).argmax(1) == y).float().mean().item()
    print("RESULT " + json.dumps({"rank": rank, "world": world, "accuracy": acc,
                                  "tag": "$5 $HOME `x`"}), flush=True)
    del model, opt  # DDP's reducer before its group (torch 1.13's teardown deadlock)
    gc.collect()
    dist.destroy_process_group()


def sleeper(params):
    import time
    print("sleeping", flush=True)
    time.sleep(params["seconds"])


def tf_digits(params):
    import json
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    from sklearn.datasets import load_digits

    tf.keras.utils.set_random_seed(0)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(32, "relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    hist = model.fit(x, y, epochs=params["epochs"], batch_size=64, verbose=0)
    cfg = json.loads(os.environ.get("TF_CONFIG", "{}"))
    print("RESULT " + json.dumps({"accuracy": float(hist.history["accuracy"][-1]),
                                  "task": cfg.get("task")}), flush=True)


def boom():
    import os
    import sys
    import time

    # Every rank fails: a torchrun agent whose worker failed waits (up to 5 min) at its exit
    # barrier for the other agents, so one failing rank alone would not end its replica soon.
    rank = os.environ["RANK"]
    print(f"rank {rank} of WORLD_SIZE {os.environ['WORLD_SIZE']}", flush=True)
    time.sleep(1)
    print(f"fatal: accelerator not found on rank {rank}", flush=True)
    sys.exit(7)


def rank_one_exits(params):
    import os
    import sys
    import time

    # Rank 1 fails; rank 0 trains on until the file params["go"] exists (at most 120 s). Rank
    # 1's torchrun agent waits at its exit barrier for rank 0's, so its replica runs on.
    rank = os.environ["RANK"]
    if rank == "1":
        print("rank 1: loss is nan, giving up", flush=True)
        sys.exit(7)
    deadline = time.time() + 120
    while not os.path.exists(params["go"]) and time.time() < deadline:
        time.sleep(0.2)
    print("rank 0 done", flush=True)


def mpi_sum():
    """Every rank adds rank + 1 with MPI's allreduce (mpi4py): 3 on 2 ranks."""
    import json

    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    total = comm.allreduce(comm.Get_rank() + 1)
    print("RESULT " + json.dumps({"rank": comm.Get_rank(), "size": comm.Get_size(),
                                  "sum": total}), flush=True)


def devices():
    # Each process prints which devices it was given and its place in the world (no torch: the
    # wiring alone is under test).
    import json
    import os
    print("RESULT " + json.dumps({"rank": int(os.environ["RANK"]),
                                  "local_rank": int(os.environ["LOCAL_RANK"]),
                                  "world": int(os.environ["WORLD_SIZE"]),
                                  "cuda": os.environ.get("CUDA_VISIBLE_DEVICES", "unset")}),
          flush=True)
