#!/usr/bin/env python3
"""Writes train-locally-then-on-a-cluster.ipynb (no outputs) from the cells below; edit the
cells here and rerun, so the stored notebook never carries outputs."""

import os

import nbformat

CELLS = [
    ("markdown", """# Train locally, then on a cluster

A PyTorch DDP job written as a Python function: 2 workers on scikit-learn's digits, run **on
this machine** by trainctl's local backend (no cluster), with live logs; then the loss per rank
read back from the logs and plotted; then the **same job** submitted to a Kubernetes cluster
running `trainctl operator` — only `backend=` changes."""),
    ("code", """import os
from trainctl import TrainingClient

# The cluster cells run when a kubeconfig is given (the integration suite sets it).
KUBECONFIG = os.environ.get("TRAINCTL_NOTEBOOK_KUBECONFIG")
local = TrainingClient(backend="local")
JOB = "notebook-ddp-digits"
"""),
    ("code", """def train_digits(params):
    import datetime
    import gc
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from sklearn.datasets import load_digits

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"])
    mine = slice(rank, None, world)  # each rank trains on its own shard
    for epoch in range(params["epochs"]):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[mine]), y[mine])
        loss.backward()
        opt.step()
        print(f"epoch={epoch} rank={rank} loss={loss.item():.4f}", flush=True)
    accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"rank={rank} accuracy={accuracy:.3f}", flush=True)
    # DDP's reducer goes before its process group: torch 1.13 can hang at exit otherwise.
    del model, opt
    gc.collect()
    dist.destroy_process_group()
"""),
    ("code", """# Start fresh if an earlier run left the job behind (jobs outlive the kernel).
if JOB in [j.metadata.name for j in local.list_jobs()]:
    local.delete_job(JOB)

local.create_job(name=JOB, train_func=train_digits, parameters={"lr": 0.5, "epochs": 30},
                 num_workers=2, num_procs_per_worker=1)
local.get_job_pod_names(JOB)
"""),
    ("code", """# Live logs of every replica, as they are written; returns when the job ends.
logs, _ = local.get_job_logs(JOB, is_master=False, follow=True)
job = local.wait_for_job_conditions(JOB, polling_interval=1)
print(job.status.conditions[-1].type, job.status.replica_statuses)
"""),
    ("code", """import re
import matplotlib.pyplot as plt

losses = {}
for pod, text in logs.items():
    for m in re.finditer(r"epoch=(\\d+) rank=(\\d+) loss=([0-9.]+)", text):
        losses.setdefault(int(m.group(2)), []).append(float(m.group(3)))
assert sorted(losses) == [0, 1], losses
assert all(v[-1] < v[0] for v in losses.values()), "the loss did not go down"

fig, ax = plt.subplots(figsize=(6, 3.5))
for rank, values in sorted(losses.items()):
    ax.plot(values, label=f"rank {rank}")
ax.set_xlabel("epoch"); ax.set_ylabel("loss"); ax.legend(); ax.set_title(JOB)
plt.show()
"""),
    ("markdown", """## The same job on a cluster

Everything above ran on this machine. With a kubeconfig for a cluster where `trainctl operator`
(or upstream's operator) runs, the same call submits the job there; the container image must
have torch and scikit-learn (the function's source travels in the container's command)."""),
    ("code", """if KUBECONFIG:
    cluster = TrainingClient(backend="kubernetes", config_file=KUBECONFIG)
    cluster.create_job(name=JOB, train_func=train_digits, parameters={"lr": 0.5, "epochs": 30},
                       num_workers=2, num_procs_per_worker=1,
                       base_image="docker.io/pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime")
    # Waits for the pods to be scheduled and started, then streams their logs.
    cluster_logs, _ = cluster.get_job_logs(JOB, is_master=False, follow=True)
    print(sorted(cluster_logs))
else:
    print("no cluster configured: skipped (set TRAINCTL_NOTEBOOK_KUBECONFIG)")
"""),
    ("code", """if KUBECONFIG:
    job = cluster.wait_for_job_conditions(JOB, polling_interval=1, wait_timeout=300)
    print(job.status.conditions[-1].type, cluster.get_job_pod_names(JOB, is_master=True))
    cluster.delete_job(JOB)
local.delete_job(JOB)
"""),
]


def write_notebook(cells, file_name):
    """Writes ``cells`` ((kind, text) pairs) as ``file_name`` beside this script, no outputs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    for i, (kind, text) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(make(text.strip("\n"), id=f"cell-{i}"))  # stable ids: clean diffs
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), file_name)
    nbformat.write(nb, out)
    print(out)


def main():
    write_notebook(CELLS, "train-locally-then-on-a-cluster.ipynb")


if __name__ == "__main__":
    main()
