#!/usr/bin/env python3
"""Writes trainer-v2.ipynb (no outputs) from the cells below; edit the cells here and rerun, so
the stored notebook never carries outputs."""

from make_notebook import write_notebook

CELLS = [
    ("markdown", """# Trainer v2 from a notebook: on this machine, then on a cluster

`TrainerClient` — the `kubeflow` SDK 0.5's API — trains a PyTorch DDP function on **2 nodes of
the `torch-distributed` runtime on this machine** (trainctl's local backend: each node a
torchrun agent, wired by the runtime's `PET_*` env; no cluster, no image), with its progress
(reported by rank 0 to the job's status endpoint) and logs shown live; then the loss per rank is read back from the logs and plotted; then the **same call** runs
on a Kubernetes cluster where `trainctl operator` (or upstream's controller) serves TrainJobs —
only `backend=` changes."""),
    ("code", """import os
from trainctl import CustomTrainer, TrainerClient

# The cluster cells run when a kubeconfig is given (the integration suite sets it).
KUBECONFIG = os.environ.get("TRAINCTL_NOTEBOOK_KUBECONFIG")
local = TrainerClient(backend="local")
print([r.name for r in local.list_runtimes()])
"""),
    ("code", """def train_linear(lr, epochs):
    # Runs on every node: DDP over gloo on a fixed synthetic set, each rank on its half.
    import gc
    import time
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x = torch.randn(512, 8)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.5
    mine = slice(rank * 512 // world, (rank + 1) * 512 // world)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    try:  # progress to the job's status (a no-op where the job has no status endpoint)
        from trainctl.progress import report
    except ImportError:
        report = None
    for epoch in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
        loss.backward()
        opt.step()
        print(f"epoch={epoch} rank={rank} loss={loss.item():.4f}", flush=True)
        if report and rank == 0 and (epoch + 1) % 5 == 0:
            report(progress_percentage=100 * (epoch + 1) // epochs, metrics={"loss": loss.item()})
        time.sleep(0.05)
    # DDP's reducer goes before its process group: torch 1.13 can hang at exit otherwise.
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


trainer = CustomTrainer(func=train_linear, func_args={"lr": 0.05, "epochs": 40}, num_nodes=2)
"""),
    ("code", """# A TrainJob on this machine; the cell returns once it is made.
job_name = local.train(runtime="torch-distributed", trainer=trainer)
job_name
"""),
    ("code", """# Progress as rank 0 reports it (the job's status endpoint), live until the job ends.
import time

seen = None
while True:
    job = local.get_job(job_name)
    if job.trainer_status and job.trainer_status.progress_percentage != seen:
        seen = job.trainer_status.progress_percentage
        print(f"{seen:3d}%  loss {job.trainer_status.metrics.get('loss')}")
    if job.status in ("Complete", "Failed"):
        break
    time.sleep(0.5)
print(job.status, [(s.name, s.status) for s in job.steps])
assert job.trainer_status.progress_percentage == 100, job.trainer_status
"""),
    ("code", """# node-1's log (follow=True streams it live while the node runs).
for line in local.get_job_logs(job_name, step="node-1", follow=True):
    print(line)
"""),
    ("code", """import re
import matplotlib.pyplot as plt

losses = {}
for step in ("node-0", "node-1"):
    for line in local.get_job_logs(job_name, step=step):
        m = re.search(r"epoch=(\\d+) rank=(\\d+) loss=([0-9.]+)", line)
        if m:
            losses.setdefault(int(m.group(2)), []).append(float(m.group(3)))
assert sorted(losses) == [0, 1], losses
assert all(v[-1] < v[0] for v in losses.values()), "the loss did not go down"

fig, ax = plt.subplots(figsize=(6, 3.5))
for rank, values in sorted(losses.items()):
    ax.plot(values, label=f"rank {rank}")
ax.set_xlabel("epoch"); ax.set_ylabel("loss"); ax.legend(); ax.set_title(job_name)
plt.show()
"""),
    ("markdown", """## The same call on a cluster

Everything above ran on this machine. With a kubeconfig for a cluster where TrainJobs are
served and the `torch-distributed` runtime is installed, the same `train()` makes a TrainJob
there: its image must have torch (the function's source travels in the trainer's command)."""),
    ("code", """if KUBECONFIG:
    cluster = TrainerClient(backend="kubernetes", config_file=KUBECONFIG)
    cluster_job = cluster.train(runtime="torch-distributed", trainer=trainer)
    # Waits for node-1's pod to start, then streams its log.
    for line in cluster.get_job_logs(cluster_job, step="node-1", follow=True):
        print(line)
    done = cluster.wait_for_job_status(cluster_job, polling_interval=1, timeout=420)
    print(done.status, [(s.name, s.status) for s in done.steps])
    cluster.delete_job(cluster_job)
else:
    print("no cluster configured: skipped (set TRAINCTL_NOTEBOOK_KUBECONFIG)")
"""),
    ("code", """local.delete_job(job_name)
[j.name for j in local.list_jobs()]
"""),
]


def main():
    write_notebook(CELLS, "trainer-v2.ipynb")


if __name__ == "__main__":
    main()
