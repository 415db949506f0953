"""The unmodified ``kubeflow`` SDK 0.5.0's own ``TrainerClient`` with trainctl's local backend set
as its public ``backend`` (trainctl.kubeflow_backend): a function on 2 nodes of the built-in
torch-distributed runtime trains through upstream's class, with upstream's CustomTrainer.

Run by the kubeflow SDK's own venv (hack/upstream-sdk/venv.sh trainer, no system packages) with
the project's SDK on PYTHONPATH: CTest `sdk.kubeflow_backend`. The training itself runs under
Debian's torchrun, started by the trainctl binary ($TRAINCTL_BIN).
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

from kubeflow.trainer import CustomTrainer, LocalProcessBackendConfig, TrainerClient

import trainctl
from trainctl import kubeflow_backend

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import train_funcs  # noqa: E402


class KubeflowTrainerClientOnTrainctl(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="trainctl-kubeflow-backend-")
        self.client = TrainerClient(backend_config=LocalProcessBackendConfig())
        self.client.backend = kubeflow_backend.runtime_backend("local", state_dir=self.state)

    def tearDown(self):
        for job in trainctl.TrainerClient(backend="local", state_dir=self.state).list_jobs():
            trainctl.TrainerClient(backend="local", state_dir=self.state).delete_job(job.name)
        shutil.rmtree(self.state, ignore_errors=True)

    def test_upstreams_client_trains_on_two_local_nodes(self):
        from kubeflow.trainer.backends.base import RuntimeBackend
        self.assertIsInstance(self.client.backend, RuntimeBackend)
        self.assertIn("torch-distributed", [r.name for r in self.client.list_runtimes()])
        name = self.client.train(runtime="torch-distributed", trainer=CustomTrainer(
            func=train_funcs.ddp_digits, func_args={"params": {"lr": 0.5, "epochs": 10}},
            num_nodes=2))
        job = self.client.wait_for_job_status(name, timeout=300, polling_interval=1)
        self.assertEqual(job.status, "Complete")
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual(sorted(s.name for s in job.steps), ["node-0", "node-1"])
        lines = list(self.client.get_job_logs(name, step="node-1"))
        results = [json.loads(line[line.index("RESULT ") + 7:]) for line in lines
                   if "RESULT {" in line]
        self.assertEqual([(r["rank"], r["world"]) for r in results], [(1, 2)])
        self.assertIn(name, [j.name for j in self.client.list_jobs()])
        self.client.delete_job(name)
        self.assertNotIn(name, [j.name for j in self.client.list_jobs()])

    def test_what_trainctl_does_not_do_says_so(self):
        with self.assertRaises(NotImplementedError):
            self.client.get_runtime_packages(self.client.get_runtime("torch-distributed"))
        with self.assertRaisesRegex(ValueError, "no-such-runtime"):
            self.client.train(runtime="no-such-runtime",
                              trainer=CustomTrainer(func=train_funcs.ddp_digits))


if __name__ == "__main__":
    unittest.main()
