"""The unmodified `kubeflow` SDK 0.5.0 (PyPI) drives `trainctl operator` on the real node through
its TrainerClient's Kubernetes backend: train() a CustomTrainer function on 2 nodes of Trainer
v2.3.0's own torch-distributed ClusterTrainingRuntime (applied unchanged from the Go module), then
list_jobs, get_job, get_job_logs, wait_for_job_status and delete_job.

The runtime's image, pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime, is served by the loopback
registry (hack/cluster/images.sh trainer-runtimes: Debian's PyTorch under that name); the real
JobSet controller (fixture node-jobset) runs the JobSet the operator makes; torchrun on each node
finds node 0 by the name JobSet gives it, through the node's CoreDNS.

Run by the SDK's own venv (hack/upstream-sdk/venv.sh trainer), never by the project's: `kubeflow`
must be upstream's code. The harness modules are stdlib only.

Environment: see node_harness.py.
"""
import unittest

from node_harness import UpstreamRuntimeTestCase, get_json, wait_for
from harness import KUBECONFIG

from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import CustomTrainer, TrainerClient

from trainer_client_function import train_linear_model

RUNTIME = "torch-distributed"


class UpstreamTrainerClient(UpstreamRuntimeTestCase):
    runtime = RUNTIME
    runtime_file = "torch_distributed.yaml"
    namespace_prefix = "sdk-v2"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.client = TrainerClient(KubernetesBackendConfig(namespace=cls.ns, config_file=KUBECONFIG))

    def test_a_function_trains_on_two_nodes_and_is_read_back_and_deleted(self):
        runtime = self.client.get_runtime(RUNTIME)
        self.assertEqual(runtime.trainer.framework, "torch")
        self.assertIn(RUNTIME, [r.name for r in self.client.list_runtimes()])

        name = self.client.train(runtime=runtime,
                                 trainer=CustomTrainer(func=train_linear_model, num_nodes=2))
        try:
            job = self.client.wait_for_job_status(name, status={"Complete"}, timeout=420,
                                                  polling_interval=2)
        except (RuntimeError, TimeoutError) as e:
            raise AssertionError(f"{e}\n{self.explain(name)}")
        self.assertEqual(job.status, "Complete")
        self.assertEqual(job.num_nodes, 2)
        self.assertEqual(job.runtime.name, RUNTIME)
        self.assertEqual(sorted(s.name for s in job.steps), ["node-0", "node-1"])
        self.assertTrue(all(s.status == "Succeeded" for s in job.steps), job.steps)

        self.assertIn(name, [j.name for j in self.client.list_jobs()])
        self.assertEqual(self.client.get_job(name).status, "Complete")
        log = "".join(self.client.get_job_logs(name, step="node-0"))
        self.assertIn("rank 0 of 2: loss", log)
        self.assertIn("parameters alike on every rank: True", log)
        self.assertIn("rank 1 of 2", "".join(self.client.get_job_logs(name, step="node-1")))

        self.client.delete_job(name)
        wait_for("the TrainJob gone",
                 lambda: get_json("trainjob", name, "-n", self.ns) is None, timeout=60)
        self.assertNotIn(name, [j.name for j in self.client.list_jobs()])


if __name__ == "__main__":
    unittest.main()
