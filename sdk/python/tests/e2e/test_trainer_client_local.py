"""TrainerClient's local backend end to end: a CustomTrainer function trains PyTorch DDP on 2
nodes of trainctl's built-in torch-distributed runtime (torchrun with the runtime's PET_* env,
gloo), through the public API only: train, logs followed live, wait, steps, a second client (a
restarted kernel) finding the job, delete; and an mpi4py function on 2 nodes of the built-in
deepspeed-distributed (MPI) runtime, started on every rank by the launcher's mpirun."""

import json
import shutil
import tempfile
import unittest

from trainctl import CustomTrainer, TrainerClient

import train_funcs


def results(lines):
    return [json.loads(line[line.index("RESULT ") + 7:]) for line in lines
            if "RESULT {" in line]


class TrainerClientLocalE2E(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="trainctl-trainer-sdk-")
        self.client = TrainerClient(backend="local", state_dir=self.state)

    def tearDown(self):
        for job in self.client.list_jobs():
            self.client.delete_job(job.name)
        shutil.rmtree(self.state, ignore_errors=True)

    def test_torch_function_on_two_nodes(self):
        c = self.client
        name = c.train(runtime="torch-distributed", trainer=CustomTrainer(
            func=train_funcs.ddp_digits, func_args={"params": {"lr": 0.5, "epochs": 15}},
            num_nodes=2))
        followed = list(c.get_job_logs(name, step="node-1", follow=True))
        self.assertIn("epoch 0 rank 1", "\n".join(followed))
        job = c.wait_for_job_status(name, timeout=300, polling_interval=1)
        self.assertEqual(job.status, "Complete")
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual([(s.name, s.status) for s in job.steps],
                         [("node-0", "Succeeded"), ("node-1", "Succeeded")])
        found = results(list(c.get_job_logs(name)) + followed)
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1])
        self.assertTrue(all(r["world"] == 2 and r["tag"] == "$5 $HOME `x`" for r in found))
        self.assertGreater(found[0]["accuracy"], 0.5)
        # A new client on the same state folder (a restarted kernel) finds the job.
        again = TrainerClient(backend="local", state_dir=self.state)
        self.assertEqual([j.name for j in again.list_jobs(runtime="torch-distributed")], [name])
        self.assertEqual(again.get_job(name).status, "Complete")
        again.delete_job(name)
        self.assertEqual(c.list_jobs(), [])

    def test_mpi_function_on_two_nodes(self):
        # deepspeed-distributed (MPI): the launcher's mpirun runs the function on both slots.
        c = self.client
        name = c.train(runtime="deepspeed-distributed",
                       trainer=CustomTrainer(func=train_funcs.mpi_sum, num_nodes=2))
        job = c.wait_for_job_status(name, timeout=300, polling_interval=1)
        self.assertEqual(job.status, "Complete")
        found = results(list(c.get_job_logs(name, step="node-0")))
        self.assertEqual(sorted((r["rank"], r["size"], r["sum"]) for r in found),
                         [(0, 2, 3), (1, 2, 3)])

    def test_gpus_per_node_become_devices_and_processes(self):
        # resources_per_node={"gpu": 2} on a machine with 4 (TRAINCTL_GPU_INVENTORY: this one
        # has none): each node gets two devices of its own and torchrun starts one process per
        # device (the runtime's numProcPerNode auto), 4 ranks in all.
        import os
        os.environ["TRAINCTL_GPU_INVENTORY"] = "nvidia.com/gpu=4"
        try:
            c = self.client
            name = c.train(runtime="torch-distributed", trainer=CustomTrainer(
                func=train_funcs.devices, num_nodes=2, resources_per_node={"gpu": 2}))
            job = c.wait_for_job_status(name, timeout=300, polling_interval=1)
        finally:
            del os.environ["TRAINCTL_GPU_INVENTORY"]
        self.assertEqual(job.status, "Complete")
        found = results(list(c.get_job_logs(name, step="node-0")) +
                        list(c.get_job_logs(name, step="node-1")))
        self.assertEqual(sorted(r["rank"] for r in found), [0, 1, 2, 3])
        self.assertTrue(all(r["world"] == 4 for r in found), found)
        by_node = {}
        for r in found:
            by_node.setdefault(r["rank"] // 2, set()).add(r["cuda"])
        # Both processes of a node see that node's two devices; the nodes' devices differ.
        self.assertEqual(sorted(len(v) for v in by_node.values()), [1, 1], by_node)
        cuda = sorted(next(iter(v)) for v in by_node.values())
        self.assertEqual(sorted(",".join(cuda).split(",")), ["0", "1", "2", "3"], cuda)


if __name__ == "__main__":
    unittest.main()
