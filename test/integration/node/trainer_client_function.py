"""The function test_upstream_trainer_client.py hands to the `kubeflow` SDK's CustomTrainer. The
SDK sends its source (inspect.getsource, so it lives in a file of its own) in a bash here-document
whose delimiter is unquoted: no dollar signs or backticks in it.

Each node trains the same small linear model on its own half of a fixed synthetic set with
torch's DistributedDataParallel over gloo; rank 0 prints the world, the final loss and a
checksum of the parameters, which every rank must hold alike after the all-reduce.
"""


def train_linear_model():
    import gc

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = x @ torch.arange(1.0, 9.0).unsqueeze(1) + 0.5
    mine = slice(rank * 256 // world, (rank + 1) * 256 // world)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(60):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[mine]), y[mine])
        loss.backward()
        optimizer.step()
    checksum = torch.cat([p.detach().flatten() for p in model.parameters()]).sum()
    gathered = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(gathered, checksum.reshape(1))
    same = all(abs(g.item() - checksum.item()) < 1e-5 for g in gathered)
    print(f"rank {rank} of {world}: loss {loss.item():.4f}, parameters alike on every rank: {same}")
    # DDP's reducer goes while the group is still registered: freed after destroy_process_group
    # (as a function's locals are, at return), it frees the group, and torch 1.13 joins gloo's
    # threads holding the GIL while one still freeing a tensor waits for it: the pod never ends.
    del model, optimizer
    gc.collect()
    # Every rank ends together: gloo's teardown can wait forever on a peer that has already gone.
    dist.barrier()
    dist.destroy_process_group()
