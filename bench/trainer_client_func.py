"""The function bench/trainer_client_overhead.py trains both ways. Its source is what travels
(TrainerClient writes it to a file; by hand it is written the same way): imports inside."""


def train_to_first_step(mark, steps=20):
    """DDP over gloo on a fixed synthetic set; rank 0 writes the time of its first optimizer
    step to `mark`, then the ranks take the other steps and leave together."""
    import gc
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x = torch.randn(256, 16)
    y = x.sum(dim=1, keepdim=True)
    mine = slice(rank * 256 // world, (rank + 1) * 256 // world)
    model = DistributedDataParallel(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[mine]), y[mine]).backward()
        opt.step()
        if step == 0 and rank == 0:
            with open(mark + ".tmp", "w") as f:
                f.write(repr(time.time()))
            import os
            os.replace(mark + ".tmp", mark)
    del model, opt  # DDP's reducer before its group (torch 1.13's teardown deadlock)
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
